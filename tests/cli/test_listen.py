"""``rawp-adapters serve --listen PATH`` as a real subprocess: a resident bridge that
Masters connect to, one session per connection."""

from __future__ import annotations

import json
import signal
import socket
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import Process, SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream

from rawp_adapters.testing import assert_valid_stream
from tests.cli.conftest import CLI, WAIT, run_cli

pytestmark = pytest.mark.anyio

FAST_DEMO = ("--adapter", "sdk", "--setting", 'core_options={"delay_ms": 0}')


class Server:
    def __init__(self, process: Process, path: Path) -> None:
        self.process = process
        self.path = path

    @asynccontextmanager
    async def connect(self, open_line: dict[str, Any]) -> AsyncIterator[Connection]:
        stream = await anyio.connect_unix(self.path)
        async with stream:
            await stream.send(json.dumps(open_line).encode() + b"\n")
            yield Connection(stream)


class Connection:
    """A Master's end of one connection."""

    def __init__(self, stream: SocketStream) -> None:
        self.stream = stream
        self.lines = BufferedByteReceiveStream(stream)
        self.frames: list[dict[str, Any]] = []
        self.sent = 0

    async def next_line(self) -> dict[str, Any]:
        with anyio.fail_after(WAIT):
            line: dict[str, Any] = json.loads(await self.lines.receive_until(b"\n", 1 << 24))
        self.frames.append(line)
        return line

    async def until(self, frame_type: str) -> dict[str, Any]:
        while (frame := await self.next_line())["type"] != frame_type:
            pass
        return frame

    async def send(self, frame_type: str, payload: dict[str, Any]) -> None:
        self.sent += 1
        frame = {
            "type": frame_type,
            "session_id": self.frames[0]["session_id"],
            "seq": self.sent,
            "timestamp": "2026-01-01T00:00:00.000Z",
            "payload": payload,
        }
        await self.stream.send(json.dumps(frame).encode() + b"\n")

    async def rest(self) -> list[dict[str, Any]]:
        """Every line until the server closes the connection."""
        with anyio.fail_after(WAIT):
            while True:
                try:
                    line = await self.lines.receive_until(b"\n", 1 << 24)
                except anyio.IncompleteRead:
                    return self.frames
                self.frames.append(json.loads(line))


@asynccontextmanager
async def listening(root: Path, *args: str) -> AsyncIterator[Server]:
    """``serve --listen`` on a socket beside ``root``, killed if still running at the end."""
    path = root.parent / "s"
    process = await anyio.open_process(
        [*CLI, "serve", "--listen", str(path), "--workspace", str(root), *args],
        stderr=(root.parent / "err").open("wb"),
    )
    async with process:
        try:
            assert process.stdout is not None
            with anyio.fail_after(WAIT):
                announced = await BufferedByteReceiveStream(process.stdout).receive_until(
                    b"\n", 4096
                )
            assert json.loads(announced) == {"listening": str(path)}
            yield Server(process, path)
        finally:
            if process.returncode is None:
                process.kill()
                with anyio.CancelScope(shield=True):
                    await process.wait()


async def a_turn_allowed(connection: Connection, text: str) -> dict[str, Any]:
    """Prompt ``text``, allow the permission it asks, and return the turn's end."""
    await connection.until("session.capabilities")
    await connection.send("control.prompt.request", {"prompt_id": "p1", "text": text})
    request = await connection.until("agent.interaction.request")
    answer = {"interaction_id": request["payload"]["interaction_id"], "decision": "allow"}
    await connection.send("control.interaction.response", answer)
    return await connection.until("session.turn.end")


@pytest.mark.parametrize("server_loop", ["asyncio", "trio"])
async def test_a_resident_bridge_serves_a_session_per_connection_in_the_workspace_it_names(
    tmp_path: Path, server_loop: str
) -> None:
    root = tmp_path / "root"
    for name in ("a", "b"):
        (root / name).mkdir(parents=True)
    async with listening(root, *FAST_DEMO, "--backend", server_loop) as server:
        async with (
            server.connect({"workspace": "a"}) as first,
            server.connect({"workspace": "b", "session_id": "s-b"}) as second,
        ):
            ends = [await a_turn_allowed(first, "note A"), await a_turn_allowed(second, "note B")]
            await first.stream.send_eof()
            await second.stream.send_eof()
            streams = [await first.rest(), await second.rest()]
        assert server.process.returncode is None  # it stays up for the next Master
    assert [end["payload"]["stop_reason"] for end in ends] == ["end_turn", "end_turn"]
    assert streams[1][0]["session_id"] == "s-b"
    assert streams[0][0]["session_id"] != "s-b"
    for frames in streams:
        assert frames[-1]["type"] == "session.closed"
        assert [f["seq"] for f in frames] == list(range(1, len(frames) + 1))
        assert_valid_stream(frames)
    assert "note A" in next((root / "a").iterdir()).read_text()
    assert "note B" in next((root / "b").iterdir()).read_text()


@pytest.mark.parametrize(
    ("open_line", "reason"),
    [
        ("not json", "a bad open line (line: Invalid JSON"),
        ('{"workspace": "../.."}', "workspace '../..' is outside the server's --workspace"),
        ('{"workspace": "missing"}', "workspace 'missing' is not a directory"),
        ('{"settings": {"core": "nope"}}', "nope"),
        ('{"sesion_id": "typo"}', "a bad open line (sesion_id: Extra inputs are not permitted)"),
    ],
)
async def test_a_bad_open_line_is_answered_with_why_and_the_next_master_is_served(
    tmp_path: Path, open_line: str, reason: str
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    async with listening(root, *FAST_DEMO) as server:
        stream = await anyio.connect_unix(server.path)
        async with stream:
            await stream.send(open_line.encode() + b"\n")
            refused = await Connection(stream).rest()
        async with server.connect({}) as good:
            capabilities = await good.next_line()
    assert len(refused) == 1
    assert reason in refused[0]["error"]
    assert capabilities["type"] == "session.capabilities"


async def test_a_stop_signal_closes_every_open_session_and_removes_the_socket(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    async with listening(root, *FAST_DEMO) as server:
        assert stat.S_IMODE(server.path.stat().st_mode) == 0o600  # only its owner connects
        async with server.connect({}) as master:
            await master.until("session.capabilities")
            await master.send("control.prompt.request", {"prompt_id": "p1", "text": "hold"})
            await master.until("agent.interaction.request")  # a turn waits on the Master
            server.process.send_signal(signal.SIGTERM)
            frames = await master.rest()
        with anyio.fail_after(WAIT):
            code = await server.process.wait()
    assert code == 128 + signal.SIGTERM
    assert not server.path.exists()
    assert frames[-1]["type"] == "session.closed"
    assert_valid_stream(frames)


async def test_a_path_in_use_is_refused_and_a_socket_left_by_a_killed_server_is_taken(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    path = tmp_path / "s"
    path.write_text("not a socket")
    assert (
        "the path exists and is not a socket"
        in run_cli("serve", "--listen", str(path), "--workspace", str(root)).stderr.decode()
    )
    assert path.read_text() == "not a socket"
    path.unlink()
    with socket.socket(socket.AF_UNIX) as stale:  # bound, never unlinked: a killed server's
        stale.bind(str(path))
    async with listening(root, *FAST_DEMO) as server:
        second = run_cli("serve", "--listen", str(server.path), "--workspace", str(root))
        async with server.connect({}) as master:
            assert (await master.next_line())["type"] == "session.capabilities"
    assert second.returncode == 2
    assert "another server is listening there" in second.stderr.decode()
