"""A Master whose own task is cancelled while a turn runs: the session still closes as
one that is ended (the turn aborted, the agent stopped), not by waiting out its bounds."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from rawp_adapters import Session, SessionOptions, open_session
from rawp_adapters.frames import ClientFrame, SessionClosedFrame, TextDeltaFrame, TurnEndFrame
from tests.process.helpers import fake_adapter, fake_agent_processes

pytestmark = pytest.mark.anyio

LONG_GRACE = SessionOptions(abort_grace=60.0, close_timeout=60.0)
"""Bounds the close must not wait out: it ends well within the test's own bound."""


async def collect(session: Session, frames: list[ClientFrame], streaming: anyio.Event) -> None:
    async for frame in session:
        frames.append(frame)
        if isinstance(frame, TextDeltaFrame):
            streaming.set()


async def test_a_master_cancelled_mid_turn_gets_the_turn_aborted_and_the_session_closed(
    tmp_path: Path,
) -> None:
    frames: list[ClientFrame] = []
    streaming = anyio.Event()
    with anyio.fail_after(20):
        async with anyio.create_task_group() as reading:
            with anyio.CancelScope() as master:
                async with open_session(
                    fake_adapter(), workspace=tmp_path, options=LONG_GRACE
                ) as session:
                    reading.start_soon(collect, session, frames, streaming)
                    await session.send(session.control.prompt("HANG"))
                    await streaming.wait()
                    master.cancel()
                    await anyio.sleep_forever()
    assert master.cancelled_caught
    (turn_end,) = [frame for frame in frames if isinstance(frame, TurnEndFrame)]
    assert turn_end.payload.stop_reason == "cancelled"
    assert isinstance(frames[-1], SessionClosedFrame)
    assert frames[-1].payload.reason == "explicit"
    assert [frame.seq for frame in frames] == list(range(1, len(frames) + 1))
    assert fake_agent_processes() == []


async def test_a_master_that_gives_up_while_the_agent_starts_leaves_no_agent_behind(
    tmp_path: Path,
) -> None:
    patient = SessionOptions(start_timeout=60.0, close_timeout=60.0)
    with anyio.fail_after(20):
        with anyio.move_on_after(1.0) as master:
            async with open_session(
                fake_adapter("--mute", ready_timeout=60.0), workspace=tmp_path, options=patient
            ):
                pytest.fail("a mute agent is never ready")
    assert master.cancelled_caught
    assert fake_agent_processes() == []
