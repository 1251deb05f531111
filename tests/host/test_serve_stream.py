"""serve_stream serves a session over any byte stream pair: a TCP socket is one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import ByteReceiveStream, ByteSendStream, SocketAttribute, SocketListener
from anyio.streams.memory import MemoryObjectReceiveStream

from rawp_adapters import LineFramer, SessionContext, Turn, TurnResult, open_session
from rawp_adapters.frames import TextDelta
from rawp_adapters.host import serve_stream
from rawp_adapters.testing import FunctionAdapter, assert_valid_stream
from tests.host.asking import asking

pytestmark = pytest.mark.anyio

WAIT = 20.0


class Master:
    """The Master's end of a socket: JSON lines both ways."""

    def __init__(self, stream: anyio.abc.ByteStream) -> None:
        self.stream = stream
        self.frames: list[dict[str, Any]] = []
        self._framer = LineFramer()
        self._lines: list[bytes] = []

    async def until(self, frame_type: str) -> dict[str, Any]:
        while True:
            while not self._lines:
                chunk = await self.stream.receive()
                self._lines += [
                    line for line in self._framer.feed(chunk) if isinstance(line, bytes)
                ]
            frame: dict[str, Any] = json.loads(self._lines.pop(0))
            self.frames.append(frame)
            if frame["type"] == frame_type:
                return frame

    async def send(self, frame_type: str, payload: dict[str, Any]) -> None:
        frame = {
            "type": frame_type,
            "session_id": self.frames[0]["session_id"],
            "seq": 1,
            "timestamp": "2026-01-01T00:00:00.000Z",
            "payload": payload,
        }
        await self.stream.send(json.dumps(frame).encode() + b"\n")


async def test_a_master_on_a_tcp_socket_runs_a_prompt_and_ending_its_input_ends_the_session(
    tmp_path: Path,
) -> None:
    adapter = FunctionAdapter(asking())
    served: list[bool] = []
    async with await anyio.create_tcp_listener(local_host="127.0.0.1") as listener:
        [socket_listener] = listener.listeners
        assert isinstance(socket_listener, SocketListener)
        port = listener.extra(SocketAttribute.local_port)
        with anyio.fail_after(WAIT):
            async with await anyio.connect_tcp("127.0.0.1", port) as client:
                connection = await socket_listener.accept()

                async def serve() -> None:
                    async with connection, open_session(adapter, workspace=tmp_path) as session:
                        served.append(await serve_stream(session, connection, connection))

                async with anyio.create_task_group() as tg:
                    tg.start_soon(serve)
                    master = Master(client)
                    await master.until("session.capabilities")
                    await master.send("control.prompt.request", {"prompt_id": "p1", "text": "go"})
                    request = await master.until("agent.interaction.request")
                    interaction_id = request["payload"]["interaction_id"]
                    await master.send(
                        "control.interaction.response",
                        {"interaction_id": interaction_id, "decision": "allow"},
                    )
                    await master.until("session.turn.end")
                    await client.send_eof()
                    closed = await master.until("session.closed")
    assert served == [True]
    assert closed["payload"]["reason"] == "explicit"
    said = [f["payload"]["text"] for f in master.frames if f["type"] == "agent.text.done"]
    assert said == ["allow:answered:None"]
    assert adapter.closed
    assert_valid_stream(master.frames)


class Input(ByteReceiveStream):
    """Control lines the test feeds; ends when the test closes its sender."""

    def __init__(self, lines: MemoryObjectReceiveStream[bytes]) -> None:
        self._lines = lines

    async def receive(self, max_bytes: int = 65536) -> bytes:
        return await self._lines.receive()

    async def aclose(self) -> None:
        await self._lines.aclose()


class Output(ByteSendStream):
    """Records each write; ``gate`` holds the first one; ``broken`` fails them all."""

    def __init__(self, *, gate: anyio.Event | None = None, broken: bool = False) -> None:
        self.writes: list[bytes] = []
        self._gate = gate
        self._broken = broken

    async def send(self, item: bytes) -> None:
        if self._broken:
            raise anyio.BrokenResourceError
        if self._gate is not None:
            await self._gate.wait()
            await anyio.wait_all_tasks_blocked()
            self._gate = None
        self.writes.append(item)

    async def aclose(self) -> None:
        pass


def prompt_line(session_id: str) -> bytes:
    frame = {
        "type": "control.prompt.request",
        "session_id": session_id,
        "seq": 1,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "payload": {"prompt_id": "p1", "text": "go"},
    }
    return json.dumps(frame).encode() + b"\n"


FLOOD = 200


async def test_frames_queued_while_a_write_runs_go_out_together_each_line_whole(
    tmp_path: Path,
) -> None:
    flooded = anyio.Event()

    async def flood(turn: Turn, ctx: SessionContext) -> TurnResult:
        for n in range(FLOOD):
            await ctx.emit(TextDelta(turn_id=turn.turn_id, index=0, text=f"{n} "))
        flooded.set()
        return TurnResult()

    output = Output(gate=flooded)
    feed, lines = anyio.create_memory_object_stream[bytes](1)
    async with (
        open_session(FunctionAdapter(flood), workspace=tmp_path) as session,
        anyio.create_task_group() as tg,
    ):

        async def prompt_then_end_input() -> None:
            async with feed:
                await feed.send(prompt_line(session.session_id))
                await flooded.wait()

        tg.start_soon(prompt_then_end_input)
        with anyio.fail_after(WAIT):
            assert await serve_stream(session, Input(lines), output)
    assert all(write.endswith(b"\n") for write in output.writes)
    frames = [json.loads(line) for write in output.writes for line in write.splitlines()]
    assert_valid_stream(frames)
    deltas = [f["payload"]["text"] for f in frames if f["type"] == "agent.text.delta"]
    assert deltas == [f"{n} " for n in range(FLOOD)]
    assert len(output.writes) < len(frames) / 10


async def test_a_broken_output_ends_the_session_and_serve_stream_says_so(tmp_path: Path) -> None:
    adapter = FunctionAdapter()
    feed, lines = anyio.create_memory_object_stream[bytes](1)
    async with feed, open_session(adapter, workspace=tmp_path) as session:
        with anyio.fail_after(WAIT):
            assert not await serve_stream(session, Input(lines), Output(broken=True))
        assert session.closed
    assert adapter.closed
