"""Aborting a turn while it streams and one while its permission waits: what every agent
that can abort must show (the model's ``SLOW_STREAM`` and ``RUN_BASH``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rawp_adapters.frames import InteractionRequestFrame, InteractionResolvedFrame, TextDeltaFrame
from rawp_adapters.testing import SessionDriver, TurnRecord

NEVER_WRITTEN = "never.txt"


async def abort_streaming_then_pending(
    d: SessionDriver[Any], tool_prompt: str = f"RUN_BASH touch {NEVER_WRITTEN}"
) -> tuple[TurnRecord, TurnRecord]:
    """A turn aborted at its first text delta, then one aborted while the permission of
    ``tool_prompt``'s call waits (the driver's policy must not answer it): their records."""
    streaming = await _abort_at(d, "SLOW_STREAM 400 50", TextDeltaFrame)
    pending = await _abort_at(d, tool_prompt, InteractionRequestFrame)
    return streaming, pending


async def _abort_at(d: SessionDriver[Any], prompt: str, frame: type[Any]) -> TurnRecord:
    start = await d.start_prompt(prompt)
    turn_id = start.payload.turn_id
    await d.wait_for(frame, where=lambda f: f.payload.turn_id == turn_id)
    await d.send(d.control.abort(turn_id))
    return await d.wait_turn(turn_id)


def assert_aborted(streaming: TurnRecord, pending: TurnRecord, workspace: Path) -> None:
    """Both turns ended ``cancelled``; the waiting permission was not allowed and its
    command never ran."""
    assert streaming.stop_reason == "cancelled"
    assert pending.stop_reason == "cancelled"
    (resolved,) = pending.of_type(InteractionResolvedFrame)
    assert resolved.payload.outcome != "allowed"
    assert not (workspace / NEVER_WRITTEN).exists()
