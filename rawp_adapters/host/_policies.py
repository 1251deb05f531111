"""Reply policies: how a host answers the agent's questions."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from rawp_adapters._frames import Decision, InteractionRequest


@dataclass(frozen=True, slots=True)
class Reply:
    """One answer to an interaction: a decision (with a ``value`` for SELECT/INPUT),
    or ``timeout`` to send ``control.interaction.timeout`` (the host gave up asking)."""

    decision: Decision | None = None
    value: str | None = None
    timeout: bool = False

    @classmethod
    def allow(cls, value: str | None = None) -> Reply:
        return cls(decision="allow", value=value)

    @classmethod
    def deny(cls) -> Reply:
        return cls(decision="deny")


Policy = Callable[[InteractionRequest], "Reply | Awaitable[Reply | None] | None"]
"""Decides one interaction, synchronously or not; ``None`` leaves it unanswered (the
adapter denies it at its deadline)."""


def allow_all(request: InteractionRequest) -> Reply:
    """Allow everything; SELECT gets its first option, INPUT an empty string."""
    if request.interaction_type == "SELECT":
        return Reply.allow((request.options or [""])[0])
    if request.interaction_type == "INPUT":
        return Reply.allow("")
    return Reply.allow()


def deny_all(request: InteractionRequest) -> Reply:
    return Reply.deny()


def never_answer(request: InteractionRequest) -> None:
    """Leave every interaction to its deadline."""
    return
