"""The questions a session has put to the Master and not yet settled.

Only an explicit, fitting allow allows (:func:`judge`); every request gets exactly one
``agent.interaction.resolved``, whoever settles it (the Master, the deadline, an abort,
the session's end, the adapter giving up).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from rawp_adapters._adapter import InteractionOutcome, OutcomeReason, Question
from rawp_adapters._frames import (
    ClientPayload,
    DecidedBy,
    InteractionContext,
    InteractionRequest,
    InteractionResolved,
    InteractionResponse,
    InteractionResult,
    SessionErrorCode,
)
from rawp_adapters._protocol._effects import Effect, SettleInteraction
from rawp_adapters._protocol._judge import RESULTS, expected, judge

if TYPE_CHECKING:
    from structlog.stdlib import BoundLogger

REMEMBERED_FINISHED_INTERACTIONS: Final = 1024
"""Finished interaction ids kept to tell a late answer from an unknown one."""

Complain = Callable[[SessionErrorCode, str], None]


class Interactions:
    """The open interaction requests, by id. ``put`` numbers a payload, ``complain``
    answers the Master's bad input, ``settled`` runs after each request is settled."""

    def __init__(
        self,
        *,
        put: Callable[[ClientPayload], None],
        complain: Complain,
        settled: Callable[[], None],
        log: BoundLogger,
        new_id: Callable[[], str],
        max_open: int,
    ) -> None:
        self._put = put
        self._complain = complain
        self._settled = settled
        self._log = log
        self._new_id = new_id
        self._max_open = max_open
        self._open: dict[str, InteractionRequest] = {}
        self._finished: OrderedDict[str, OutcomeReason] = OrderedDict()

    def __len__(self) -> int:
        return len(self._open)

    def __contains__(self, interaction_id: object) -> bool:
        return interaction_id in self._open

    def open(self, question: Question, default_timeout_ms: int) -> InteractionRequest | None:
        """Publish ``question``; None when too many are open already."""
        if len(self._open) >= self._max_open:
            # An agent asking faster than anyone answers: memory stays bounded.
            self._log.warning("interaction denied: too many open", limit=self._max_open)
            return None
        timeout_ms = question.timeout_ms
        request = InteractionRequest(
            interaction_id=self._new_id(),
            interaction_type=question.interaction_type,
            timeout_ms=default_timeout_ms if timeout_ms is None else timeout_ms,
            turn_id=question.turn_id,
            title=question.title,
            message=question.message,
            options=list(question.options) if question.options is not None else None,
            context=question.context or InteractionContext(),
        )
        self._open[request.interaction_id] = request
        self._put(request)
        return request

    def answer(self, response: InteractionResponse) -> list[Effect]:
        """The Master's answer; a malformed one denies, with a ``session.error``."""
        request = self._open.get(response.interaction_id)
        if request is None:
            self._report_unknown(response.interaction_id)
            return []
        outcome = judge(request, response)
        if outcome.reason == "malformed":
            self._complain(
                SessionErrorCode.INVALID_FRAME,
                f"the answer to {request.interaction_type} interaction "
                f"{response.interaction_id} is malformed ({expected(request)}); "
                "it was denied",
            )
        return self._resolve(request, outcome, "master")

    def settle(
        self,
        interaction_id: str,
        reason: OutcomeReason,
        decided_by: DecidedBy,
        *,
        report: bool = True,
    ) -> list[Effect]:
        """Deny one request for ``reason``; an id not open is reported if ``report``."""
        request = self._open.get(interaction_id)
        if request is None:
            if report:
                self._report_unknown(interaction_id)
            return []
        return self._resolve(request, _denial(reason), decided_by)

    def settle_turn(self, turn_id: str) -> list[Effect]:
        """Deny the requests of one turn (it is aborted or ends)."""
        return [
            effect
            for request in list(self._open.values())
            if request.turn_id == turn_id
            for effect in self._resolve(request, _denial("aborted"), "abort")
        ]

    def settle_all(self) -> list[Effect]:
        """Deny every request: the session ends."""
        return [
            effect
            for request in list(self._open.values())
            for effect in self._resolve(request, _denial("closed"), "session_end")
        ]

    def _resolve(
        self, request: InteractionRequest, outcome: InteractionOutcome, decided_by: DecidedBy
    ) -> list[Effect]:
        del self._open[request.interaction_id]
        result: InteractionResult
        if outcome.reason == "answered":
            result = "allowed" if outcome.allowed else "denied"
        else:
            result = RESULTS[outcome.reason]
        self._put(
            InteractionResolved(
                interaction_id=request.interaction_id,
                outcome=result,
                decided_by=decided_by,
                turn_id=request.turn_id,
            )
        )
        self._finished[request.interaction_id] = outcome.reason
        while len(self._finished) > REMEMBERED_FINISHED_INTERACTIONS:
            self._finished.popitem(last=False)
        self._settled()
        return [SettleInteraction(request.interaction_id, outcome)]

    def _report_unknown(self, interaction_id: str) -> None:
        finished = self._finished.get(interaction_id)
        if finished is not None:
            self._log.info(
                "late interaction answer ignored",
                interaction_id=interaction_id,
                resolved_by=finished,
            )
            detail = f"interaction {interaction_id} was already resolved ({finished}); ignored"
        else:
            self._log.warning("answer for unknown interaction", interaction_id=interaction_id)
            detail = f"no open interaction {interaction_id}; ignored"
        self._complain(SessionErrorCode.UNKNOWN_INTERACTION, detail)


def _denial(reason: OutcomeReason) -> InteractionOutcome:
    return InteractionOutcome(decision="deny", reason=reason)
