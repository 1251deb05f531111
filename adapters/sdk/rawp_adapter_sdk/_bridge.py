"""The permission bridge (§17.3.1): a core's permission callback becomes an
``agent.interaction.request`` of type PERMISSION, and only an explicit allow allows.

Timeout (the Master's ``control.interaction.timeout`` or the adapter's own deadline),
abort, session close and malformed answers all deny; the session's interaction
broker resolves them, and ignores answers that come after. The deny message tells
the model why, so it can tell a refusal from a request nobody answered.
"""

from __future__ import annotations

import json
from typing import Any

from rawp_adapter_sdk._core import Allow, Deny, DenyReason, PermissionDecision, PermissionRequest
from rawp_adapters import InteractionOutcome, Question, SessionContext
from rawp_adapters.frames import InteractionContext


def deny_message(reason: DenyReason, tool_name: str, timeout_ms: int) -> str:
    """What the model is told when ``tool_name`` may not run."""
    match reason:
        case "refused":
            return f"The user refused permission to run {tool_name}. Do not retry it unasked."
        case "timeout":
            return (
                f"The permission request for {tool_name} timed out: nobody answered within "
                f"{timeout_ms} ms, so it was denied. The user did not refuse it."
            )
        case "aborted":
            return f"The user aborted the turn; {tool_name} was not run."
        case "closed":
            return f"The session is closing; {tool_name} was not run."
        case "malformed":
            return f"The answer to the permission request for {tool_name} was invalid; denied."
        case "failed":
            return f"The permission request for {tool_name} could not be made; denied."


_REASON_BY_OUTCOME: dict[str, DenyReason] = {
    "answered": "refused",
    "timeout": "timeout",
    "aborted": "aborted",
    "closed": "closed",
    "malformed": "malformed",
    "cancelled": "aborted",
}


def decide(
    outcome: InteractionOutcome, request: PermissionRequest, timeout_ms: int
) -> PermissionDecision:
    """The core's answer for a broker outcome (pure).

    An allow may carry ``value``: the edited tool input as a JSON object text [ours];
    anything else there makes the answer malformed, which denies.
    """
    if outcome.allowed:
        if outcome.value is None:
            return Allow()
        edited = _json_object(outcome.value)
        if edited is not None:
            return Allow(updated_input=edited)
        reason: DenyReason = "malformed"
    else:
        reason = _REASON_BY_OUTCOME[outcome.reason]
    return Deny(deny_message(reason, request.tool_name, timeout_ms), reason)


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


class PermissionBridge:
    """The :data:`~rawp_adapter_sdk.PermissionCallback` a core gets for one turn."""

    def __init__(self, ctx: SessionContext, *, turn_id: str, timeout_ms: int) -> None:
        self._ctx = ctx
        self._turn_id = turn_id
        self._timeout_ms = timeout_ms
        self._log = ctx.log.bind(turn_id=turn_id)

    async def __call__(self, request: PermissionRequest) -> PermissionDecision:
        tool_name = request.tool_name or "an unnamed tool"
        try:
            outcome = await self._ctx.interact(
                Question(
                    "PERMISSION",
                    turn_id=self._turn_id,
                    title=request.title or f"Allow {tool_name}?",
                    message=request.description,
                    context=InteractionContext(
                        tool_name=request.tool_name,
                        tool_input=dict(request.tool_input),
                        tool_call_id=request.tool_call_id,
                    ),
                    timeout_ms=self._timeout_ms,
                )
            )
        except Exception:
            # A request that cannot even be made (say, a core that names no tool) must
            # still answer the core, and the only safe answer is no.
            self._log.exception("permission request failed", tool_name=request.tool_name)
            return Deny(deny_message("failed", tool_name, self._timeout_ms), "failed")
        decision = decide(outcome, request, self._timeout_ms)
        self._log.debug(
            "permission decided",
            tool_name=request.tool_name,
            tool_call_id=request.tool_call_id,
            allowed=isinstance(decision, Allow),
            outcome=outcome.reason,
        )
        return decision
