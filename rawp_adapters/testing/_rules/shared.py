"""What the rules of several tiers share."""

from __future__ import annotations

from collections.abc import Sequence

from rawp_adapters._frames import (
    ClientFrame,
    Envelope,
    InteractionRequest,
    ToolInvokeResultFrame,
)
from rawp_adapters.host import SessionLike
from rawp_adapters.testing._driver import SessionDriver
from rawp_adapters.testing._outcomes import RuleSkipped, fail
from rawp_adapters.testing._probe import Probe

NO_BUSY = "needs Prompts.busy: a prompt its agent streams for a while"
NO_TOOL = "needs Prompts.tool: a prompt that makes its agent call a permission-gated tool"


def frame_index(d: SessionDriver[SessionLike], frame: Envelope) -> int:
    return next(i for i, f in enumerate(d.frames) if f is frame)


def needs(value: str | None, reason: str) -> str:
    """``value``; the rule is skipped for ``reason`` without it."""
    if value is None:
        raise RuleSkipped(reason)
    return value


async def busy_turn(p: Probe, d: SessionDriver[SessionLike]) -> str:
    """Start the busy prompt and return its turn id once the agent streams something."""
    start = await d.start_prompt(needs(p.prompts.busy, NO_BUSY))
    turn_id = start.payload.turn_id
    await d.wait_for(
        Envelope,
        where=lambda f: (
            f.type.startswith(("agent.", "tool."))
            and getattr(f.payload, "turn_id", None) == turn_id
        ),
    )
    return turn_id


def tool_refused(
    d: SessionDriver[SessionLike],
    frames: Sequence[ClientFrame],
    request: InteractionRequest,
    rule: str,
    how: str,
) -> None:
    """The tool call ``request`` asked about did not run: its result, if any, is an error."""
    call_id = request.context.tool_call_id if request.context is not None else None
    for frame in frames:
        if (
            isinstance(frame, ToolInvokeResultFrame)
            and call_id is not None
            and frame.payload.invocation_id == call_id
            and not frame.payload.is_error
        ):
            fail(
                rule,
                f"tool call {call_id} ran although its permission {how}: its "
                "tool.invoke.result is not an error (only an explicit allow allows)",
                d,
                frame_index(d, frame),
            )
