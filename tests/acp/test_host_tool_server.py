"""The host tools' MCP server on its own, in a session of the kit's function adapter
(the runtime's real context), with a client that plays the relay over TCP: what it is
sent and in which order."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import ByteStream, TaskGroup
from anyio.streams.buffered import BufferedByteReceiveStream
from rawp_adapter_acp._host_mcp import HostToolServer

from rawp_adapters import SessionContext, Turn, TurnResult
from rawp_adapters.frames import HostTool
from rawp_adapters.testing import FunctionAdapter, drive
from tests.support.core_scenarios import ECHO

pytestmark = pytest.mark.anyio

BIG_CATALOG = [
    HostTool(name=f"tool_{n}", description="x" * 50_000, input_schema={"type": "object"})
    for n in range(400)
]
"""A catalog whose listing (20 MB) cannot fit in the sockets' buffers: its answer is
still going out while the client does not read."""


class Relay:
    """The agent's side of one relay connection, one JSON-RPC message a line; what it
    was sent, in order (:func:`what` of each message)."""

    def __init__(self, stream: ByteStream) -> None:
        self.stream = stream
        self.reader = BufferedByteReceiveStream(stream)
        self.received: list[str] = []

    async def send(self, message: dict[str, Any]) -> None:
        await self.stream.send(json.dumps(message).encode() + b"\n")

    async def list_tools(self, request_id: int) -> None:
        await self.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/list"})

    async def receive(self) -> dict[str, Any]:
        with anyio.fail_after(30):
            line = await self.reader.receive_until(b"\n", MAX_LINE)
        message: dict[str, Any] = json.loads(line)
        self.received.append(what(message))
        return message

    async def list_again_and_answer_the_ping(self) -> None:
        """List the tools again and read until both that answer and a ``ping`` came, in
        whichever order they come (the ping answered)."""
        await self.list_tools(2)
        listed = pinged = False
        while not (listed and pinged):
            message = await self.receive()
            if message.get("method") == "ping":
                await self.send({"jsonrpc": "2.0", "id": message["id"], "result": {}})
                pinged = True
            listed = listed or "result" in message


MAX_LINE = 64 * 1024 * 1024
CHANGED = "notifications/tools/list_changed"
Play = Callable[[HostToolServer, Relay, TaskGroup], Awaitable[None]]


def after_the_announcements(received: list[str]) -> list[str]:
    """What came after ``received``'s first run of announcements, those announced again
    while a slow client got to its listing left out (the server repeats them each
    second)."""
    start = received.index(CHANGED)
    while received[start] == CHANGED:
        start += 1
    return [name for name in received[start:] if name != CHANGED]


def what(message: dict[str, Any]) -> str:
    """A message's method, or the size of the catalog a ``tools/list`` answer gives."""
    if "method" in message:
        return str(message["method"])
    return f"{len(message['result'].get('tools', []))} tools"


async def played(tmp_path: Path, play: Play, first: Sequence[HostTool] = ()) -> list[str]:
    """What a relay was sent while ``play`` ran, in a session's turn: the server started
    (``first`` published before the relay connects) and the relay connected with the
    session's token. The publications ``play`` starts in the task group end with it."""
    relays: list[Relay] = []

    async def scenario(turn: Turn, ctx: SessionContext) -> TurnResult:
        server = HostToolServer(ctx, lambda: turn.turn_id, relist_wait=30)
        token = (await server.start("stdio")).env["RAWP_MCP_TOKEN"]
        if first:
            await server.publish(first)  # no client yet: at once
        stream = await anyio.connect_tcp("127.0.0.1", server.port)
        relays.append(relay := Relay(stream))
        async with stream, anyio.create_task_group() as tg:
            await stream.send(token.encode() + b"\n")
            await play(server, relay, tg)
        return TurnResult()

    async with drive(FunctionAdapter(scenario), workspace=tmp_path, timeout=60) as d:
        turn = await d.prompt("play the relay")
    assert turn.stop_reason == "end_turn"
    return relays[0].received


async def test_a_catalog_published_while_a_listing_goes_out_is_announced_and_waited_for(
    tmp_path: Path,
) -> None:
    # The listing the client reads gives the catalog it asked for; the publication that
    # came while that answer was going out waits for the client to list the new one.
    async def play(server: HostToolServer, relay: Relay, tg: TaskGroup) -> None:
        await relay.list_tools(1)
        head = await relay.reader.receive()  # the answer has begun: it is the catalog's
        tg.start_soon(server.publish, [HostTool.model_validate(ECHO)])
        await anyio.wait_all_tasks_blocked()  # published while the answer goes out
        rest = await relay.reader.receive_until(b"\n", MAX_LINE)
        relay.received.append(what(json.loads(head + rest)))
        await relay.receive()
        await relay.list_again_and_answer_the_ping()

    received = await played(tmp_path, play, first=BIG_CATALOG)
    assert received[:2] == ["400 tools", CHANGED]
    assert after_the_announcements(received) == ["1 tools", "ping"]


async def test_a_client_that_misses_the_announcement_of_a_new_catalog_is_told_again(
    tmp_path: Path,
) -> None:
    # Claude Code drops a list_changed that comes while its MCP client still starts
    async def play(server: HostToolServer, relay: Relay, tg: TaskGroup) -> None:
        await relay.list_tools(1)
        await relay.receive()
        tg.start_soon(server.publish, [HostTool.model_validate(ECHO)])
        await relay.receive()  # missed
        await relay.receive()
        await relay.list_again_and_answer_the_ping()

    received = await played(tmp_path, play)
    assert received[:3] == ["0 tools", CHANGED, CHANGED]
    assert after_the_announcements(received) == ["1 tools", "ping"]
