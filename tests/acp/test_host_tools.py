"""The Master's host tools on real ACP agents: each agent that calls MCP tools gets them
as the session's ``rawp`` MCP server (the Copilot CLI over HTTP, the others over stdio),
the catalog published after ``session/new`` reaches it (gemini-cli re-lists on
``list_changed`` in the background: the publication waits for that), and its call goes to
the Master, whose answer the model sees, reported once; a ``Delegation`` runs a sub-agent
the same way; an abort ends a call the Master has not answered; the server answers only a
connection that starts with the session's token (or, over HTTP, carries it as its bearer
token), a connection reset ends only itself, and a connected client that never lists the
new catalog holds a publication up only for ``host_tools_relist_wait``. Each runs on one
event loop (gemini on trio, the others on asyncio; how the adapter runs on each loop is
proven elsewhere)."""

from __future__ import annotations

import json
import socket
import struct
from functools import partial
from pathlib import Path

import anyio
import psutil
import pytest
from anyio.abc import SocketAttribute
from rawp_adapter_acp import _host_mcp

from rawp_adapters import AgentMetadata, ClientFrame, open_session
from rawp_adapters.frames import (
    AgentErrorFrame,
    SessionCapabilitiesFrame,
    ToolCatalogUpdatedFrame,
    ToolInvokeRequestFrame,
    ToolInvokeResultFrame,
    TurnEndFrame,
)
from rawp_adapters.host import Delegation, HostTools, allow_all, serve_host
from rawp_adapters.testing import SessionDriver, drive
from tests.acp.agents import AcpAgentName
from tests.acp.test_mcp_servers import TIMEOUT, adapter_with_mcp
from tests.support.core_scenarios import ECHO

pytestmark = [pytest.mark.anyio, pytest.mark.acp]

tools = HostTools()


@tools.tool()
async def lookup(word: str) -> str:
    """Look a word up in the team glossary."""
    return f"glossary says {word[::-1]}"


HOST_TOOL_NAME = {
    "claude": "mcp__rawp__{}",
    "gemini": "mcp_rawp_{}",
    "opencode": "rawp_{}",
    "codex": "{}",  # inside the namespace mcp__rawp
    "copilot": "rawp-{}",
}
"""How each agent offers a host tool to its model (the name the scripted model calls)."""

HOST_SETTINGS = {"copilot": {"host_tools_transport": "http"}}
"""The Copilot CLI takes no stdio MCP server from its client: it gets them over HTTP."""

FIRST_TURN = {"codex": "Say hello."}
"""codex-acp starts its MCP servers at the session's first prompt and sends that turn's
model request without waiting for them: its host tools are offered from the next turn
(specs/acp.md)."""

RELAY_DELAY = 3.0
"""How long the late relay waits before it connects (under ``host_tools_relist_wait``)."""

LOOP = {"gemini": "trio"}
"""The event loop each agent runs on here (default asyncio)."""


async def run_agent(
    name: AcpAgentName, servers: dict[str, str], home: Path, host_tools: HostTools, prompt: str
) -> tuple[list[str], list[ClientFrame]]:
    """One prompt to ``name`` (after the first turn :data:`FIRST_TURN` gives it) with
    ``host_tools`` served by ``serve_host``; the names the
    agent confirmed and the session's frames."""
    adapter, workspace = adapter_with_mcp(
        name, servers, home, host_tools=True, **HOST_SETTINGS.get(name, {})
    )
    frames: list[ClientFrame] = []
    first_turn_ended = anyio.Event()
    with anyio.fail_after(TIMEOUT):
        async with (
            open_session(adapter, workspace=workspace) as session,
            anyio.create_task_group() as tg,
        ):

            def on_frame(frame: ClientFrame) -> None:
                frames.append(frame)
                if isinstance(frame, TurnEndFrame):
                    if name in FIRST_TURN and not first_turn_ended.is_set():
                        first_turn_ended.set()
                    else:
                        tg.start_soon(session.close)

            serve = partial(serve_host, session, host_tools, allow_all, on_frame=on_frame)
            confirmed: list[str] = await tg.start(serve)
            if name in FIRST_TURN:
                await session.send(session.control.prompt(FIRST_TURN[name]))
                await first_turn_ended.wait()
            await session.send(session.control.prompt(prompt))
    return confirmed, frames


def master_results(frames: list[ClientFrame]) -> list[ToolInvokeResultFrame]:
    master = {
        f.payload.invocation_id
        for f in frames
        if isinstance(f, ToolInvokeRequestFrame) and f.payload.executor == "master"
    }
    return [
        f
        for f in frames
        if isinstance(f, ToolInvokeResultFrame) and f.payload.invocation_id in master
    ]


def said(frames: list[ClientFrame]) -> list[str]:
    """Each frame's type, with what an error or a tool call says."""
    return [
        f"{f.type} {getattr(f.payload, 'message', '') or getattr(f.payload, 'tool_name', '')}"
        for f in frames
    ]


def model_text(frames: list[ClientFrame]) -> str:
    return "".join(
        str(getattr(f.payload, "text", "")) for f in frames if f.type == "agent.text.delta"
    )


@pytest.mark.parametrize("name", list(HOST_TOOL_NAME))
async def test_the_agent_calls_a_host_tool_published_after_the_session_started_as_one_call(
    name: AcpAgentName, anyio_backend: str, servers: dict[str, str], tmp_path: Path
) -> None:
    if anyio_backend != LOOP.get(name, "asyncio"):
        pytest.skip("runs on one event loop only (see the module docstring)")
    await assert_one_host_call(name, servers, tmp_path)


async def test_codex_offers_the_host_tools_from_its_second_prompt_though_its_relay_starts_late(
    anyio_backend: str, servers: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # codex-acp starts the relay at the first prompt and does not wait for it: a relay
    # still starting when the first turn ends must not leave the second without the tools
    if anyio_backend != "asyncio":
        pytest.skip("runs on asyncio only (see the module docstring)")
    late = tmp_path / "late_relay.py"
    late.write_text(
        f"import runpy, time\ntime.sleep({RELAY_DELAY})\n"
        f"runpy.run_path({str(_host_mcp._RELAY)!r}, run_name='__main__')\n"
    )
    monkeypatch.setattr(_host_mcp, "_RELAY", late)
    await assert_one_host_call("codex", servers, tmp_path)


async def test_codex_gets_a_catalog_published_after_its_first_turn_and_a_later_one_is_a_warning(
    anyio_backend: str, servers: dict[str, str], tmp_path: Path
) -> None:
    # codex lists the server's tools once, when its MCP client starts (at the first turn
    # at the latest): that listing waits for the first catalog, and a later catalog,
    # which codex never lists, is said to the Master
    if anyio_backend != "asyncio":
        pytest.skip("runs on asyncio only (see the module docstring)")
    # the first turn may take seconds on a loaded host: its listing waits longer than by
    # default, within the 10 s codex gives an MCP server to start
    adapter, workspace = adapter_with_mcp(
        "codex", servers, tmp_path, host_tools=True, host_tools_relist_wait=8.0
    )
    async with drive(adapter, workspace=workspace, policy=allow_all, timeout=TIMEOUT) as d:
        await d.prompt("Say hello.")
        await d.send(d.control.publish_tools([ECHO]))
        await d.wait_for(ToolCatalogUpdatedFrame)
        start = await d.start_prompt('CALL_TOOL echo {"text": "hi"}')
        request = await d.wait_for(
            ToolInvokeRequestFrame, where=lambda f: f.payload.executor == "master"
        )
        await d.send(d.control.tool_result(request.payload.invocation_id, "the Master says hi"))
        called = await d.wait_turn(start.payload.turn_id)
        mark = len(d.frames)
        await d.send(d.control.publish_tools([ECHO, {**ECHO, "name": "echo_again"}]))
        await d.wait_for(ToolCatalogUpdatedFrame, after=mark)
    assert request.payload.tool_name == "echo"
    assert "the Master says hi" in called.text
    (warning,) = [f for f in d.frames[mark:] if isinstance(f, AgentErrorFrame)]
    assert warning.payload.severity == "warning"
    assert "only once" in warning.payload.message


async def assert_one_host_call(name: AcpAgentName, servers: dict[str, str], home: Path) -> None:
    """The agent calls the host tool ``lookup`` once, the Master answers, the model sees it."""
    called = HOST_TOOL_NAME[name].format("lookup")
    confirmed, frames = await run_agent(
        name, servers, home, tools, f'CALL_TOOL {called} {{"word": "turn"}}'
    )
    assert confirmed == ["lookup"]
    (capabilities,) = [f for f in frames if isinstance(f, SessionCapabilitiesFrame)]
    assert capabilities.payload.features.host_tools
    results = master_results(frames)
    assert len(results) == 1, (
        f"the Master's calls ended {results}; the session: {said(frames)}; "
        f"the model said: {model_text(frames)!r}"
    )
    assert results[0].payload.output == "glossary says nrut"
    assert "glossary says nrut" in model_text(frames)
    # One call, reported once (the runtime's, under the host tool's name): the agent's
    # call of its MCP relay is neither shown again nor asked about.
    (request,) = [f for f in frames if isinstance(f, ToolInvokeRequestFrame)]
    assert request.payload.tool_name == "lookup"
    assert [f for f in frames if f.type == "agent.interaction.request"] == []


@pytest.mark.parametrize("name", ["claude", "gemini"])
async def test_the_agent_delegates_a_task_to_a_sub_agent_through_a_host_tool(
    name: AcpAgentName, anyio_backend: str, servers: dict[str, str], tmp_path: Path
) -> None:
    if anyio_backend != LOOP.get(name, "asyncio"):
        pytest.skip("runs on one event loop only (see the module docstring)")
    demo = AgentMetadata(adapter_type="sdk", settings={"core": "demo"})
    delegating = HostTools([Delegation(demo, name="delegate", relay="result")])
    task = {"description": "a note", "prompt": "Note this down."}
    called = HOST_TOOL_NAME[name].format("delegate")
    confirmed, frames = await run_agent(
        name, servers, tmp_path, delegating, f"CALL_TOOL {called} {json.dumps(task)}"
    )
    assert confirmed == ["delegate"]
    (result,) = master_results(frames)
    assert result.payload.output_type == "agent_result"
    assert not result.payload.is_error
    assert result.payload.output
    assert str(result.payload.output)[:40] in model_text(frames)


async def test_an_abort_while_the_master_runs_a_host_tool_ends_the_call_and_the_turn(
    anyio_backend: str, servers: dict[str, str], tmp_path: Path
) -> None:
    if anyio_backend != "asyncio":
        pytest.skip("runs on asyncio only (see the module docstring)")
    adapter, workspace = adapter_with_mcp("claude", servers, tmp_path, host_tools=True)
    async with drive(adapter, workspace=workspace, policy=allow_all, timeout=TIMEOUT) as d:
        await d.send(d.control.publish_tools([ECHO]))
        await d.wait_for(ToolCatalogUpdatedFrame)
        start = await d.start_prompt('CALL_TOOL mcp__rawp__echo {"text": "hi"}')
        request = await d.wait_for(
            ToolInvokeRequestFrame, where=lambda f: f.payload.executor == "master"
        )
        await d.send(d.control.abort(start.payload.turn_id))
        aborted = await d.wait_turn(start.payload.turn_id)
        after = await d.prompt("Say hello.")
    (result,) = [
        f
        for f in aborted.of_type(ToolInvokeResultFrame)
        if f.payload.invocation_id == request.payload.invocation_id
    ]
    assert result.payload.is_error
    assert result.payload.resolution == "cancelled"
    assert aborted.stop_reason == "cancelled"
    assert after.stop_reason == "end_turn"


def relay_of(session_id: str) -> psutil.Process:
    """The session's host tool relay, which the agent started."""
    for process in psutil.process_iter():
        try:
            if process.environ().get("RAWP_SESSION_ID") == session_id and any(
                arg.endswith("_mcp_relay.py") for arg in process.cmdline()
            ):
                return process
        except psutil.Error:
            continue
    raise AssertionError("no host tool relay runs for the session")


async def ask_tools(port: int, token: str) -> bytes:
    """What the adapter answers a ``tools/list`` sent after ``token`` (b"" if it hangs up)."""
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    async with await anyio.connect_tcp("127.0.0.1", port) as stream:
        await stream.send(token.encode() + b"\n" + json.dumps(request).encode() + b"\n")
        try:
            return await stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            return b""


async def post_tools_list(port: int, bearer: str) -> bytes:
    """The HTTP response to a ``tools/list`` POSTed with ``bearer`` as its token."""
    body = json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}).encode()
    head = f"POST /mcp HTTP/1.1\r\nAuthorization: Bearer {bearer}\r\n"
    head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    async with await anyio.connect_tcp("127.0.0.1", port) as stream:
        await stream.send(head.encode() + body)
        received = b""
        with anyio.fail_after(TIMEOUT):
            while not received.endswith((b"}", b"\r\n\r\n")):
                received += await stream.receive()
        return received


async def reset_after_token(port: int, token: str) -> None:
    """A relay that sends the token and half a request, then resets the connection."""
    async with await anyio.connect_tcp("127.0.0.1", port) as stream:
        await stream.send(token.encode() + b"\n" + b'{"jsonrpc": "2.0", "id": 2, "met')
        raw = stream.extra(SocketAttribute.raw_socket)
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


async def publish_beside_a_silent_client(d: SessionDriver, port: int, token: str) -> bytes:
    """Publish the catalog again while a client that never lists it is connected; what
    that client is then sent (the publication ends after ``host_tools_relist_wait``)."""
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    async with await anyio.connect_tcp("127.0.0.1", port) as silent:
        await silent.send(token.encode() + b"\n" + json.dumps(ping).encode() + b"\n")
        await silent.receive()  # answered: the server knows the client
        mark = len(d.frames)
        await d.send(d.control.publish_tools([ECHO]))
        await d.wait_for(ToolCatalogUpdatedFrame, after=mark)
        with anyio.fail_after(TIMEOUT):
            return await silent.receive()


async def test_the_host_tools_server_answers_only_with_the_sessions_token_and_outlives_a_reset(
    anyio_backend: str, servers: dict[str, str], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    if anyio_backend != "asyncio":
        pytest.skip("runs on asyncio only (see the module docstring)")
    adapter, workspace = adapter_with_mcp(
        "claude", servers, tmp_path, host_tools=True, host_tools_relist_wait=1.0
    )
    async with drive(adapter, workspace=workspace, policy=allow_all, timeout=TIMEOUT) as d:
        await d.send(d.control.publish_tools([ECHO]))
        await d.wait_for(ToolCatalogUpdatedFrame)
        relay = relay_of(d.session.session_id)
        token, cmdline = relay.environ()["RAWP_MCP_TOKEN"], relay.cmdline()
        port = int(cmdline[-1])
        refused = await ask_tools(port, "not-the-token")
        answered = await ask_tools(port, token)
        await reset_after_token(port, token)
        after_reset = await ask_tools(port, token)
        over_http = await post_tools_list(port, token)
        refused_over_http = await post_tools_list(port, "not-the-token")
        announced = await publish_beside_a_silent_client(d, port, token)
        turn = await d.prompt("Say hello.")
    assert token not in " ".join(cmdline)
    assert refused == b""
    assert json.loads(answered)["result"]["tools"][0]["name"] == "echo"
    assert json.loads(after_reset)["result"]["tools"][0]["name"] == "echo"
    assert over_http.startswith(b"HTTP/1.1 200 ")
    assert json.loads(over_http.split(b"\r\n\r\n", 1)[1])["result"]["tools"][0]["name"] == "echo"
    assert refused_over_http.startswith(b"HTTP/1.1 401 ")
    assert json.loads(announced)["method"] == "notifications/tools/list_changed"
    assert "has not listed the new host tools yet" in caplog.text  # said, not silent
    assert turn.stop_reason == "end_turn"
