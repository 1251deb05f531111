"""The Master's host tools as an MCP server for an ACP agent (ACP agents take tools
only as MCP servers). The agent starts :mod:`rawp_adapter_acp._mcp_relay` over stdio;
the relay connects to :class:`HostToolServer` on 127.0.0.1 (a port of the session's
own, its first line the session's random token) and this side speaks MCP. Or, for an
agent that takes no stdio server from its client, the agent speaks MCP's streamable
HTTP to that port itself (:mod:`rawp_adapter_acp._host_http`, the token as a bearer
token; server messages on its event stream). Either way: ``tools/list``
gives the published catalog, ``tools/call`` goes to
:meth:`~rawp_adapters.SessionContext.call_host_tool` (schema check, deadline, abort,
the session's end: the runtime's rules), and a catalog published later is announced
with ``notifications/tools/list_changed`` (again every second to a client that has not
listed it yet). A publication ends once every agent-side client connected then has
listed the new catalog and answered a ``ping`` after it (or ``relist_wait`` has
passed): agents that re-list in the background (gemini-cli) then
offer the new tools to the model of the next prompt, which the runtime sends after it.
A client that lists only once, when it connects (codex's), is answered only at the
first publication (or after ``relist_wait``) if it lists before it; a later catalog
cannot reach it, which the Master is told."""

from __future__ import annotations

import contextlib
import json
import secrets
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import ByteSendStream, ByteStream, SocketAttribute
from anyio.streams.buffered import BufferedByteReceiveStream

from rawp_adapter_acp import _host_http as http
from rawp_adapter_acp._settings import HostToolsTransport
from rawp_adapter_acp._translate import SERVER_NAME
from rawp_adapters import HostToolCall, LineFramer, McpServer, OversizedLine, SessionContext
from rawp_adapters.frames import AgentError, AgentErrorCode, HostTool

_RELAY = Path(__file__).with_name("_mcp_relay.py")
_MAX_LINE = 16 * 1024 * 1024
_PROTOCOL = "2025-06-18"
_LISTS_ONCE = frozenset({"codex-mcp-client"})
"""MCP clients (``clientInfo.name``) that list a server's tools once, when they connect,
and never again, ``list_changed`` or not."""
_LIST_CHANGED = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
_ANNOUNCE_AGAIN_S = 1.0
"""How often a client that has not listed a new catalog is told of it again: Claude
Code drops a ``list_changed`` that comes while its MCP client is still starting."""
_TOOL_USE_ID = "claudecode/toolUseId"
"""Where claude-agent-acp puts its own id of the call, which the Master then sees once."""
_UNREADABLE = (
    anyio.EndOfStream,
    anyio.IncompleteRead,
    anyio.DelimiterNotFound,
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
)


class HostToolServer:
    def __init__(
        self, ctx: SessionContext, turn_id: Callable[[], str | None], relist_wait: float
    ) -> None:
        self._ctx = ctx
        self._turn_id = turn_id
        self._relist_wait = relist_wait
        self._token = secrets.token_hex(16)
        self._tools: list[HostTool] = []
        self._version = 0
        self._clients: set[_Client] = set()
        """The clients to tell of a new catalog (relays, HTTP sessions with a stream)."""
        self._sessions: dict[str, _Client] = {}
        self._published = anyio.Event()
        self._first_listing = anyio.Event()
        self._first_lister: _Client | None = None
        self._prompted = False
        self._waited_for_first_listing = False
        self.port = 0

    async def start(self, transport: HostToolsTransport) -> McpServer:
        """Listen; the server the agent is to start (stdio) or connect to (HTTP)."""
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
        self.port = listener.extra(SocketAttribute.local_port)
        self._ctx.start_soon(lambda: listener.serve(self._serve), name="acp host tools")
        if transport == "http":
            return McpServer(
                name=SERVER_NAME,
                url=f"http://127.0.0.1:{self.port}/mcp",
                headers={"Authorization": f"Bearer {self._token}"},
            )
        return McpServer(
            name=SERVER_NAME,
            command=sys.executable,
            args=["-I", "-S", str(_RELAY), str(self.port)],  # stdlib only: no site to read
            env={"RAWP_MCP_TOKEN": self._token},
        )

    async def publish(self, tools: Sequence[HostTool]) -> None:
        self._tools = list(tools)
        self._version += 1
        self._published.set()
        clients = [c for c in self._clients if not (c.lists_once and c.has_listed())]
        if len(clients) < len(self._clients):
            await self._ctx.emit(
                AgentError(
                    severity="warning",
                    error_code=AgentErrorCode.AGENT_ERROR,
                    message="the agent lists the host tools only once, when it starts its "
                    "MCP client: the catalog published now is not offered to its model",
                )
            )
        for client in clients:
            await client.send(_LIST_CHANGED)
        with anyio.move_on_after(self._relist_wait) as waiting:
            for client in clients:
                await client.relisted(self._version)
        if waiting.cancelled_caught:
            self._ctx.log.warning(
                "an MCP client of the agent has not listed the new host tools yet; "
                "the next prompt may go without them",
                waited_s=self._relist_wait,
            )

    async def before_prompt(self) -> None:
        """An agent that starts its MCP client only at its first prompt (codex-acp) sends
        that prompt's model request without the host tools, and a later one with them
        only if the client has listed them by then. So the first later prompt while a
        catalog is published waits for the first listing and a ``ping`` after it (once,
        up to ``relist_wait``; at once when that listing is long done)."""
        if not self._prompted:
            self._prompted = True
            return
        if self._waited_for_first_listing or not self._tools:
            return
        self._waited_for_first_listing = True
        with anyio.move_on_after(self._relist_wait) as waiting:
            await self._first_listing.wait()
            lister = self._first_lister
            if lister is not None:  # a client that lists once has what it will ever have
                await lister.relisted(0 if lister.lists_once else self._version)
        if waiting.cancelled_caught:
            self._ctx.log.warning(
                "the agent's MCP client has not listed the host tools yet; "
                "the prompt goes without them",
                waited_s=self._relist_wait,
            )

    async def _serve(self, stream: ByteStream) -> None:
        async with stream:
            reader = BufferedByteReceiveStream(stream)
            try:
                first = await reader.receive_until(b"\n", _MAX_LINE)
            except _UNREADABLE:
                return
            if first == self._token.encode():
                await self._serve_relay(stream, reader)
            elif http.is_request_line(first):
                # an agent that hangs up ends its own requests, never the session
                with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                    await self._serve_http(stream, reader, first.rstrip(b"\r"))
            else:
                self._ctx.log.warning("a connection to the host tools without the token")

    async def _serve_relay(self, stream: ByteStream, reader: BufferedByteReceiveStream) -> None:
        client = _Client(stream)
        self._clients.add(client)
        try:
            async with anyio.create_task_group() as tg:
                async for line in _lines(reader):
                    try:
                        message = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(message, dict) and not client.answered(message):
                        tg.start_soon(self._answer, client, message)
        finally:
            self._clients.discard(client)
            client.gone()

    async def _serve_http(
        self, stream: ByteStream, reader: BufferedByteReceiveStream, line: bytes | None
    ) -> None:
        while (request := await http.read_request(reader, line)) is not None:
            line = None
            if request.headers.get("authorization") != f"Bearer {self._token}":
                self._ctx.log.warning("a connection to the host tools without the token")
                await stream.send(http.response("401 Unauthorized"))
                return
            session = self._sessions.get(request.headers.get("mcp-session-id", ""))
            if request.method == "GET" and session is not None:
                await self._stream_events(session, stream, reader)
                return
            if request.method != "POST":
                await stream.send(http.response("405 Method Not Allowed"))
                continue
            await self._post(stream, session, request.body)

    async def _post(self, stream: ByteStream, session: _Client | None, body: bytes) -> None:
        try:
            message = json.loads(body)
        except ValueError:
            message = None
        if not isinstance(message, dict):
            await stream.send(http.response("400 Bad Request"))
            return
        headers = {}
        if session is None:
            session = _Client(None, events=True)
            if message.get("method") == "initialize":
                session_id = uuid.uuid4().hex
                self._sessions[session_id] = session
                headers["Mcp-Session-Id"] = session_id
        if session.answered(message) or message.get("id") is None:
            await stream.send(http.response("202 Accepted"))
            return
        reply = _Reply()
        await self._answer(reply, message)
        await stream.send(http.response("200 OK", reply.message, headers))
        if reply.version is not None:
            session.listed(reply.version)

    async def _stream_events(
        self, session: _Client, stream: ByteStream, reader: BufferedByteReceiveStream
    ) -> None:
        """The session's event stream, open until the agent closes it."""
        await stream.send(http.EVENT_STREAM)
        session.stream = stream
        self._clients.add(session)
        try:
            async for _ in _lines(reader):
                pass
        finally:
            self._clients.discard(session)
            session.gone()

    async def _answer(self, client: _Client | _Reply, message: dict[str, Any]) -> None:
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            return  # a notification (initialized, cancelled): nothing to answer
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        assert isinstance(params, dict)
        result: dict[str, Any]
        if method == "initialize":
            info = params.get("clientInfo")
            if isinstance(client, _Client) and isinstance(info, dict):
                client.lists_once = info.get("name") in _LISTS_ONCE
            result = {
                "protocolVersion": params.get("protocolVersion") or _PROTOCOL,
                "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": SERVER_NAME, "version": "1"},
            }
        elif method == "ping":
            result = {}
        elif method == "tools/list":
            if isinstance(client, _Client) and client.lists_once and not self._published.is_set():
                with anyio.move_on_after(self._relist_wait):  # its only listing: the catalog's
                    await self._published.wait()
            # what the client is sent, not a catalog published while the answer goes out
            version, tools = self._version, self._tools
            result = {
                "tools": [
                    {"name": t.name, "description": t.description, "inputSchema": t.input_schema}
                    for t in tools
                ]
            }
            await client.send({"jsonrpc": "2.0", "id": request_id, "result": result})
            client.listed(version)
            if not self._first_listing.is_set():
                self._first_lister = client if isinstance(client, _Client) else None
                self._first_listing.set()
            return
        elif method == "tools/call":
            result = await self._call(params)
        else:
            await client.send(
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "error": {"code": -32601, "message": f"no method {method!r}"},
                }
            )
            return
        await client.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    async def _call(self, params: dict[str, Any]) -> dict[str, Any]:
        meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
        assert isinstance(meta, dict)
        own_id = meta.get(_TOOL_USE_ID)
        arguments = params.get("arguments")
        outcome = await self._ctx.call_host_tool(
            HostToolCall(
                invocation_id=own_id if isinstance(own_id, str) else f"mcp-{uuid.uuid4().hex}",
                tool_name=str(params.get("name")),
                input=arguments if isinstance(arguments, dict) else {},
                turn_id=self._turn_id(),
            )
        )
        return {"content": [{"type": "text", "text": outcome.text}], "isError": outcome.is_error}


class _Reply:
    """Where the answer to one HTTP request is kept, to go out as its response."""

    def __init__(self) -> None:
        self.message: dict[str, Any] | None = None
        self.version: int | None = None

    async def send(self, message: dict[str, Any]) -> None:
        self.message = message

    def listed(self, version: int) -> None:
        self.version = version


class _Client:
    """One agent-side MCP client: a relay's connection, or an HTTP session, which has a
    stream (its event stream) only while the agent holds one open."""

    def __init__(self, stream: ByteSendStream | None, *, events: bool = False) -> None:
        self.stream = stream
        self._events = events
        self._lock = anyio.Lock()
        self._listed = -1  # the version of the catalog it was last sent; -1: none yet
        self._changed = anyio.Event()
        self._pings: dict[str, anyio.Event] = {}
        self.lists_once = False
        """Whether the client lists the tools only when it connects (:data:`_LISTS_ONCE`)."""

    def listed(self, version: int) -> None:
        """The client was sent the catalog of ``version``."""
        self._listed = max(self._listed, version)
        self._changed.set()
        self._changed = anyio.Event()

    def has_listed(self) -> bool:
        return self._listed >= 0

    async def relisted(self, version: int) -> None:
        """Until the client has listed the catalog of ``version`` (told of it again every
        :data:`_ANNOUNCE_AGAIN_S` until it does) and handled that answer: a ``ping`` sent
        after it comes back (the client reads its messages in order)."""
        while self._listed < version:
            with anyio.move_on_after(_ANNOUNCE_AGAIN_S) as waiting:
                await self._changed.wait()
            if waiting.cancelled_caught:
                await self.send(_LIST_CHANGED)
        ping_id = f"rawp-ping-{uuid.uuid4().hex}"
        pong = self._pings[ping_id] = anyio.Event()
        try:
            await self.send({"jsonrpc": "2.0", "id": ping_id, "method": "ping"})
            await pong.wait()
        finally:
            del self._pings[ping_id]

    def gone(self) -> None:
        """The connection ended: nothing is to be waited for from it."""
        self.listed(sys.maxsize)
        for pong in self._pings.values():
            pong.set()

    def answered(self, message: dict[str, Any]) -> bool:
        """Whether ``message`` answers one of this side's pings (nothing more to do)."""
        pong = self._pings.get(str(message.get("id"))) if "method" not in message else None
        if pong is not None:
            pong.set()
        return "method" not in message

    async def send(self, message: dict[str, Any]) -> None:
        if self.stream is None:
            return
        if self._events:
            data = http.event(message)
        else:
            data = json.dumps(message, ensure_ascii=False).encode() + b"\n"
        async with self._lock:
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                await self.stream.send(data)


async def _lines(reader: BufferedByteReceiveStream) -> AsyncIterator[bytes]:
    """The connection's lines until it ends, however it ends: a relay that resets the
    connection ends its own calls, never the session."""
    framer = LineFramer(_MAX_LINE)
    while True:
        try:
            chunk = await reader.receive()
        except _UNREADABLE:
            return
        for line in framer.feed(chunk):
            if not isinstance(line, OversizedLine):
                yield line
