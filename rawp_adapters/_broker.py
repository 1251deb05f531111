"""The interaction broker: an adapter asks, the Master answers, and anything but an
explicit allow is a deny (timeout, abort, close, malformed answer)."""

from __future__ import annotations

import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
from structlog.stdlib import BoundLogger

from rawp_adapters._adapter import InteractionOutcome, OutcomeReason
from rawp_adapters._frames import (
    InteractionContext,
    InteractionRequest,
    InteractionResponse,
    InteractionType,
    SessionErrorCode,
)

_REMEMBERED_FINISHED = 1024


@dataclass(slots=True)
class _Pending:
    request: InteractionRequest
    done: anyio.Event = field(default_factory=anyio.Event)
    outcome: InteractionOutcome | None = None

    def resolve(self, outcome: InteractionOutcome) -> bool:
        if self.outcome is not None:
            return False
        self.outcome = outcome
        self.done.set()
        return True


def _deny(reason: OutcomeReason) -> InteractionOutcome:
    return InteractionOutcome(decision="deny", reason=reason)


def judge(request: InteractionRequest, response: InteractionResponse) -> InteractionOutcome:
    """The outcome a response gives: allow only when it is explicit and fits the request."""
    kind = request.interaction_type
    if response.decision == "deny":
        return _deny("answered")
    if kind in ("PERMISSION", "CONFIRM"):
        if response.decision == "allow":
            # ``value`` rides along: for PERMISSION it may carry the edited tool input.
            return InteractionOutcome(decision="allow", reason="answered", value=response.value)
        return _deny("malformed")
    value = response.value
    if value is None or (kind == "SELECT" and request.options and value not in request.options):
        return _deny("malformed")
    return InteractionOutcome(decision="allow", reason="answered", value=value)


def _expected(request: InteractionRequest) -> str:
    if request.interaction_type in ("PERMISSION", "CONFIRM"):
        return "decision must be allow or deny"
    if request.interaction_type == "SELECT" and request.options:
        return f"value must be one of {request.options}"
    return "a value is required"


class InteractionBroker:
    """Holds the open interactions of one session. Several may be open at once."""

    def __init__(
        self,
        *,
        publish: Callable[[InteractionRequest], None],
        report: Callable[[SessionErrorCode, str], None],
        default_timeout_ms: int,
        max_open: int,
        log: BoundLogger,
    ) -> None:
        self._publish = publish
        self._report = report
        self._default_timeout_ms = default_timeout_ms
        self._max_open = max_open
        self._log = log
        self._open: dict[str, _Pending] = {}
        self._finished: OrderedDict[str, OutcomeReason] = OrderedDict()

    @property
    def open_count(self) -> int:
        return len(self._open)

    async def ask(
        self,
        interaction_type: InteractionType,
        *,
        turn_id: str | None = None,
        title: str | None = None,
        message: str | None = None,
        options: list[str] | None = None,
        context: InteractionContext | Mapping[str, Any] | None = None,
        timeout_ms: int | None = None,
    ) -> InteractionOutcome:
        if len(self._open) >= self._max_open:
            # An agent asking faster than anyone answers: memory stays bounded.
            self._log.warning("interaction denied: too many open", limit=self._max_open)
            return _deny("overloaded")
        if context is None:
            context = InteractionContext()
        elif not isinstance(context, InteractionContext):
            context = InteractionContext.model_validate(dict(context))
        request = InteractionRequest(
            interaction_id=str(uuid.uuid4()),
            interaction_type=interaction_type,
            timeout_ms=self._default_timeout_ms if timeout_ms is None else timeout_ms,
            turn_id=turn_id,
            title=title,
            message=message,
            options=options,
            context=context,
        )
        pending = _Pending(request)
        self._open[request.interaction_id] = pending
        try:
            self._publish(request)
            with anyio.move_on_after(request.timeout_ms / 1000):
                await pending.done.wait()
            pending.resolve(_deny("timeout"))
        finally:
            pending.resolve(_deny("cancelled"))
            self._forget(request.interaction_id, pending)
        assert pending.outcome is not None
        return pending.outcome

    def answer(self, response: InteractionResponse) -> None:
        pending = self._open.get(response.interaction_id)
        if pending is None:
            self._unknown(response.interaction_id)
            return
        outcome = judge(pending.request, response)
        if not pending.resolve(outcome):
            self._unknown(response.interaction_id)
        elif outcome.reason == "malformed":
            self._report(
                SessionErrorCode.INVALID_FRAME,
                f"the answer to {pending.request.interaction_type} interaction "
                f"{response.interaction_id} is malformed ({_expected(pending.request)}); "
                "it was denied",
            )

    def expire(self, interaction_id: str) -> None:
        """``control.interaction.timeout``: the Master gave up; the agent gets deny."""
        self._resolve(interaction_id, "timeout")

    def reject_malformed(self, interaction_id: str) -> None:
        self._resolve(interaction_id, "malformed")

    def deny_turn(self, turn_id: str, reason: OutcomeReason) -> None:
        for pending in list(self._open.values()):
            if pending.request.turn_id == turn_id:
                pending.resolve(_deny(reason))

    def deny_all(self, reason: OutcomeReason) -> None:
        for pending in list(self._open.values()):
            pending.resolve(_deny(reason))

    def _resolve(self, interaction_id: str, reason: OutcomeReason) -> None:
        pending = self._open.get(interaction_id)
        if pending is None or not pending.resolve(_deny(reason)):
            self._unknown(interaction_id)

    def _unknown(self, interaction_id: str) -> None:
        # Resolved but not yet forgotten (its waiter has not run since) counts as finished.
        pending = self._open.get(interaction_id)
        finished = (
            pending.outcome.reason
            if pending is not None and pending.outcome is not None
            else self._finished.get(interaction_id)
        )
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
        self._report(SessionErrorCode.UNKNOWN_INTERACTION, detail)

    def _forget(self, interaction_id: str, pending: _Pending) -> None:
        self._open.pop(interaction_id, None)
        assert pending.outcome is not None
        self._finished[interaction_id] = pending.outcome.reason
        while len(self._finished) > _REMEMBERED_FINISHED:
            self._finished.popitem(last=False)
