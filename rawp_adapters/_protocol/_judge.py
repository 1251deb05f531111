"""How a Master's answer decides an interaction: only an explicit, fitting allow allows."""

from __future__ import annotations

from typing import Final

from rawp_adapters._adapter import InteractionOutcome, OutcomeReason
from rawp_adapters._frames import InteractionRequest, InteractionResponse, InteractionResult

RESULTS: Final[dict[OutcomeReason, InteractionResult]] = {
    "timeout": "timed_out",
    "aborted": "cancelled",
    "closed": "cancelled",
    "malformed": "malformed",
    "cancelled": "cancelled",
}


_DENIED: Final = InteractionOutcome(decision="deny", reason="answered")
_ALLOWED: Final = InteractionOutcome(decision="allow", reason="answered")
"""The most common outcomes, shared (outcomes are frozen)."""


def judge(request: InteractionRequest, response: InteractionResponse) -> InteractionOutcome:
    """The outcome a response gives: allow only when it is explicit and fits the request."""
    kind = request.interaction_type
    if response.decision == "deny":
        return _DENIED
    if kind in ("PERMISSION", "CONFIRM"):
        if response.decision == "allow":
            if response.value is None:
                return _ALLOWED
            # ``value`` rides along: for PERMISSION it may carry the edited tool input.
            return InteractionOutcome(decision="allow", reason="answered", value=response.value)
        return InteractionOutcome(decision="deny", reason="malformed")
    value = response.value
    if value is None or (kind == "SELECT" and request.options and value not in request.options):
        return InteractionOutcome(decision="deny", reason="malformed")
    return InteractionOutcome(decision="allow", reason="answered", value=value)


def expected(request: InteractionRequest) -> str:
    if request.interaction_type in ("PERMISSION", "CONFIRM"):
        return "decision must be allow or deny"
    if request.interaction_type == "SELECT" and request.options:
        return f"value must be one of {request.options}"
    return "a value is required"
