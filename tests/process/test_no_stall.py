"""No stall (issue 12): batching never holds a frame back. The agent writes one line and
then nothing until the Master has seen its frame (it waits for the abort the test sends
once it has), so the frame can only come while the stream is quiet."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest
from anyio.abc import ByteReceiveStream, ByteSendStream
from rawp_adapter_process import ProcessAdapter

from rawp_adapters import LineFramer, open_session
from rawp_adapters.host import serve_stream
from tests.process.helpers import FAKES

pytestmark = pytest.mark.anyio

WAIT = 20.0
"""Generous: the frame is awaited while the agent holds, not timed."""
DELTA = b'{"type":"message_update","assistantMessageEvent":{"type":"text_delta","delta":"one"}}\n'


def holding_adapter(tmp_path: Path) -> ProcessAdapter:
    replayed = tmp_path / "one-line.jsonl"
    replayed.write_bytes(DELTA)
    command = [sys.executable, "-I", "-S", str(FAKES / "replay_agent.py"), str(replayed), "--hold"]
    return ProcessAdapter.from_settings({"command": command})


async def test_the_frame_of_the_last_line_reaches_the_api_while_the_agent_is_quiet(
    tmp_path: Path,
) -> None:
    async with open_session(holding_adapter(tmp_path), workspace=tmp_path) as session:
        await session.send(session.control.prompt("go"))
        with anyio.fail_after(WAIT):
            async for frame in session:
                if frame.type == "agent.text.delta":
                    break
        assert session.turn_id is not None  # the agent still holds the turn open
        await session.send(session.control.abort(session.turn_id))
        with anyio.fail_after(WAIT):
            async for frame in session:
                if frame.type == "session.turn.end":
                    assert frame.payload.stop_reason == "cancelled"
                    break


class _Master(ByteSendStream):
    """What ``serve_stream`` writes, as frames; ``delta`` is set at the text delta."""

    def __init__(self) -> None:
        self.framer = LineFramer()
        self.delta = anyio.Event()
        self.turn_id = ""

    async def send(self, item: bytes) -> None:
        for line in self.framer.feed(item):
            assert isinstance(line, bytes)
            frame = json.loads(line)
            if frame["type"] == "session.turn.start":
                self.turn_id = frame["payload"]["turn_id"]
            elif frame["type"] == "agent.text.delta":
                self.delta.set()

    async def aclose(self) -> None:
        pass


async def test_the_frame_of_the_last_line_is_written_by_serve_stream_while_the_agent_is_quiet(
    tmp_path: Path,
) -> None:
    to_session, control = anyio.create_memory_object_stream[bytes](16)
    master = _Master()

    class _Control(ByteReceiveStream):
        async def receive(self, max_bytes: int = 65536) -> bytes:
            return await control.receive()

        async def aclose(self) -> None:
            pass

    async with (
        open_session(holding_adapter(tmp_path), workspace=tmp_path) as session,
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(serve_stream, session, _Control(), master)
        await to_session.send(session.control.prompt("go").model_dump_json().encode() + b"\n")
        with anyio.fail_after(WAIT):
            await master.delta.wait()
        abort = session.control.abort(master.turn_id).model_dump_json()
        await to_session.send(abort.encode() + b"\n")
        await to_session.aclose()
