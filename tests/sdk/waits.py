"""Waits the SDK tests share."""

from __future__ import annotations

from rawp_adapters.frames import AgentStateChangedFrame, ClientFrame
from rawp_adapters.testing import SessionDriver


async def idle_after(d: SessionDriver, frame: ClientFrame) -> None:
    """Wait until the session is idle again after ``frame`` (e.g. the end of a compaction,
    before which a prompt would be refused)."""
    await d.wait_for(
        AgentStateChangedFrame,
        where=lambda f: f.payload.state == "idle",
        after=d.frames.index(frame),
    )
