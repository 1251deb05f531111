"""The SDK side: the agent process and its ACP connection (``agent-client-protocol``),
all in the loop :class:`~rawp_adapter_acp._bridge.Bridge` gives the SDK. What the agent
sends becomes items posted to the session's loop, in the order it arrived:
:class:`Update`, :class:`Permission`, :class:`UsageReport`, :class:`LineTooLong`,
:class:`Exited`.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, cast

import anyio
from acp import PROTOCOL_VERSION, RequestError, schema
from acp.client.connection import ClientSideConnection
from acp.interfaces import Client
from structlog.stdlib import BoundLogger

from rawp_adapter_acp._bridge import Bridge
from rawp_adapter_acp._models import AdvertisedModels, ConfigOption, advertised_models
from rawp_adapters import LineFramer, McpServer, OversizedLine
from rawp_adapters.processes import AgentProcess, ExitStatus, Marker, exit_status

try:
    _VERSION = version("rawp-adapter-acp")
except PackageNotFoundError:  # pragma: no cover - run from a source tree
    _VERSION = "0"


@dataclass(frozen=True, slots=True)
class Update:
    update: object


@dataclass(frozen=True, slots=True)
class Permission:
    tool_call: schema.ToolCallUpdate
    options: list[schema.PermissionOption]
    future: asyncio.Future[schema.RequestPermissionResponse]


@dataclass(frozen=True, slots=True)
class UsageReport:
    """A ``usage_update``, read leniently (claude-agent-acp sends ``used: null``, which the
    SDK's model refuses and would drop)."""

    used: int | None
    size: int | None
    cost: float | None
    currency: str | None


@dataclass(frozen=True, slots=True)
class LineTooLong:
    size: int


@dataclass(frozen=True, slots=True)
class Exited:
    status: ExitStatus


@dataclass(frozen=True, slots=True)
class Started:
    session_id: str
    init: schema.InitializeResponse
    modes: schema.SessionModeState | None
    config_options: list[ConfigOption]
    models: AdvertisedModels | None
    mcp_refused: dict[str, str]
    """The session's MCP servers not given to the agent, by name, with why."""


AcpMcpServers = list[
    schema.HttpMcpServer | schema.SseMcpServer | schema.AcpMcpServer | schema.McpServerStdio
]


def acp_mcp_servers(
    servers: Sequence[McpServer], capabilities: schema.McpCapabilities | None
) -> tuple[AcpMcpServers, dict[str, str]]:
    """The servers in ACP's terms, those of a transport the agent does not take
    (``mcpCapabilities``; stdio every agent must take) left out, with why."""
    given: AcpMcpServers = []
    refused: dict[str, str] = {}
    for server in servers:
        if server.command is not None:
            env = [schema.EnvVariable(name=k, value=v) for k, v in server.env.items()]
            given.append(
                schema.McpServerStdio(
                    name=server.name, command=server.command, args=server.args, env=env
                )
            )
        elif capabilities is not None and capabilities.http:
            assert server.url is not None
            headers = [schema.HttpHeader(name=k, value=v) for k, v in server.headers.items()]
            given.append(
                schema.HttpMcpServer(name=server.name, url=server.url, headers=headers, type="http")
            )
        else:
            refused[server.name] = "the agent takes no HTTP MCP servers (mcpCapabilities.http)"
    return given, refused


def _lenient_usage(message: dict[str, Any]) -> UsageReport | None:
    if message.get("method") != "session/update":
        return None
    params = message.get("params")
    update = params.get("update") if isinstance(params, dict) else None
    if not isinstance(update, dict) or update.get("sessionUpdate") != "usage_update":
        return None
    raw_cost = update.get("cost")
    cost: dict[str, Any] = raw_cost if isinstance(raw_cost, dict) else {}
    amount = cost.get("amount")
    used, size = update.get("used"), update.get("size")
    return UsageReport(
        used=used if isinstance(used, int) else None,
        size=size if isinstance(size, int) else None,
        cost=float(amount) if isinstance(amount, int | float) else None,
        currency=cost.get("currency") if isinstance(cost.get("currency"), str) else None,
    )


class _StdioTransport:
    """The SDK's message-level transport over the agent's pipes: newline-delimited JSON
    with our own line bound (qwen sends a 569 KB line), ``usage_update`` read leniently
    before the SDK sees it, and the unstable ``models`` of ``session/new|load`` kept
    (:attr:`session_models`; the SDK's result model drops it)."""

    def __init__(
        self, process: AgentProcess, bridge: Bridge, max_line_bytes: int, log: BoundLogger
    ) -> None:
        self._process = process
        self._bridge = bridge
        self._framer = LineFramer(max_line_bytes)
        self._lines: deque[bytes | OversizedLine] = deque()
        self._log = log
        self._session_requests: set[object] = set()
        self.session_models: AdvertisedModels | None = None

    async def send(self, message: dict[str, Any]) -> None:
        if message.get("method") in ("session/new", "session/load"):
            self._session_requests.add(message.get("id"))
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()
        await self._process.write(data + b"\n")

    async def receive(self) -> dict[str, Any] | None:
        while True:
            while not self._lines:
                try:
                    chunk = await self._process.stdout.receive()
                except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
                    return None
                self._lines.extend(self._framer.feed(chunk))
            line = self._lines.popleft()
            if isinstance(line, OversizedLine):
                self._bridge.post(LineTooLong(line.size))
                continue
            try:
                message = json.loads(line)
            except ValueError:
                self._log.warning("agent wrote a line that is not JSON", line=line[:200])
                continue
            if not isinstance(message, dict):
                continue
            if (usage := _lenient_usage(message)) is not None:
                self._bridge.post(usage)
                continue
            if "method" not in message and message.get("id") in self._session_requests:
                self._session_requests.discard(message.get("id"))
                result = message.get("result")
                if isinstance(result, dict):
                    self.session_models = advertised_models(result.get("models"))
            return message

    async def close(self) -> None:
        """The process's end is :meth:`AcpAgent.stop`'s."""


class _Client:
    """The ACP client methods the agent may call. File system and terminal methods are
    declined (``initialize`` says ``fs`` false, ``terminal`` false): agents use their own
    tools, in their own working directory, the session's workspace."""

    def __init__(self, bridge: Bridge) -> None:
        self._bridge = bridge

    async def session_update(self, session_id: str, update: object, **kwargs: Any) -> None:
        self._bridge.post(Update(update))

    async def request_permission(
        self,
        session_id: str,
        tool_call: schema.ToolCallUpdate,
        options: list[schema.PermissionOption],
        **kwargs: Any,
    ) -> schema.RequestPermissionResponse:
        future: asyncio.Future[schema.RequestPermissionResponse] = (
            asyncio.get_running_loop().create_future()
        )
        self._bridge.post(Permission(tool_call, options, future))
        return await future

    async def read_text_file(self, **kwargs: Any) -> Any:
        raise RequestError.method_not_found("fs/read_text_file")

    async def write_text_file(self, **kwargs: Any) -> Any:
        raise RequestError.method_not_found("fs/write_text_file")

    async def create_terminal(self, **kwargs: Any) -> Any:
        raise RequestError.method_not_found("terminal/create")

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    def on_connect(self, conn: object) -> None:
        return None


def _server_named(exc: RequestError, servers: AcpMcpServers) -> str | None:
    """The server an agent's refusal of ``session/new`` names (omp refuses the whole
    session when one server does not start: ``dead: MCP subprocess closed stdout``)."""
    text = f"{exc} {json.dumps(exc.data)}"
    for server in servers:
        if re.search(rf"(?<![\w-]){re.escape(server.name)}(?![\w-])", text):
            return server.name
    return None


async def _new_session(
    conn: ClientSideConnection, cwd: Path, mcp: AcpMcpServers, refused: dict[str, str]
) -> schema.NewSessionResponse:
    """``session/new``; refused over one of ``mcp`` that the error names, asked again
    without it (the server is added to ``refused``), once per server at most."""
    while True:
        try:
            return await conn.new_session(cwd=str(cwd), mcp_servers=mcp)
        except RequestError as exc:
            name = _server_named(exc, mcp)
            if name is None:
                raise
            refused[name] = f"the agent could not start it ({exc}: {exc.data})"
            mcp = [s for s in mcp if s.name != name]


class AcpAgent:
    """One ACP agent process and its connection; every method runs in the SDK's loop."""

    def __init__(self, bridge: Bridge, log: BoundLogger) -> None:
        self._bridge = bridge
        self._log = log
        self.process: AgentProcess | None = None
        self._conn: ClientSideConnection | None = None
        self.session_id: str | None = None

    async def start(
        self,
        argv: list[str],
        *,
        cwd: Path,
        env: dict[str, str],
        marker: Marker,
        stderr_tail_bytes: int,
        max_line_bytes: int,
        timeout: float,
        resume: str | None,
        mcp_servers: Sequence[McpServer],
    ) -> Started:
        process = await AgentProcess.spawn(
            argv,
            cwd=cwd,
            env=env,
            marker=marker,
            stderr_tail_bytes=stderr_tail_bytes,
            log=self._log,
        )
        self.process = process
        self._bridge.spawn(process.drain_stderr)
        self._bridge.spawn(self._watch_exit)
        await process.start_guard()
        transport = _StdioTransport(process, self._bridge, max_line_bytes, self._log)
        conn = ClientSideConnection(cast(Client, _Client(self._bridge)), transport)
        self._conn = conn
        with anyio.fail_after(timeout):
            init = await conn.initialize(
                protocol_version=PROTOCOL_VERSION,
                client_capabilities=schema.ClientCapabilities(
                    fs=schema.FileSystemCapabilities(read_text_file=False, write_text_file=False),
                    terminal=False,
                ),
                client_info=schema.Implementation(name="rawp-adapter-acp", version=_VERSION),
            )
            capabilities = init.agent_capabilities
            mcp, refused = acp_mcp_servers(
                mcp_servers, capabilities.mcp_capabilities if capabilities else None
            )
            if resume is not None:
                if not init.agent_capabilities or not init.agent_capabilities.load_session:
                    raise RequestError(-32601, "the agent cannot load sessions (loadSession)")
                loaded = await conn.load_session(cwd=str(cwd), session_id=resume, mcp_servers=mcp)
                self.session_id = resume
                modes = loaded.modes if loaded is not None else None
                options = (loaded.config_options if loaded is not None else None) or []
            else:
                new = await _new_session(conn, cwd, mcp, refused)
                self.session_id = new.session_id
                modes = new.modes
                options = new.config_options or []
        return Started(
            self.session_id, init, modes, list(options), transport.session_models, refused
        )

    async def ended(self, within: float) -> ExitStatus | None:
        """The agent's own exit, if it comes within ``within`` seconds (its stderr read
        to the end by then), else None."""
        with anyio.move_on_after(within):
            return await self._end()
        return None

    async def _end(self) -> ExitStatus:
        """The agent's exit, once its last words are in the stderr tail."""
        assert self.process is not None
        returncode = await self.process.wait()
        await self.process.stderr_ended()
        return exit_status(returncode)

    async def _watch_exit(self) -> None:
        self._bridge.post(Exited(await self._end()))

    def _connection(self) -> tuple[ClientSideConnection, str]:
        if self._conn is None or self.session_id is None:
            raise ConnectionError("the agent is not running")
        return self._conn, self.session_id

    async def prompt(self, text: str) -> schema.PromptResponse:
        assert self.process is not None
        await self.process.record_tree()
        conn, session_id = self._connection()
        return await conn.prompt(
            session_id=session_id, prompt=[schema.TextContentBlock(type="text", text=text)]
        )

    async def cancel(self) -> None:
        conn, session_id = self._connection()
        await conn.cancel(session_id=session_id)

    async def set_mode(self, mode_id: str, timeout: float) -> None:
        with anyio.fail_after(timeout):
            conn, session_id = self._connection()
            await conn.set_session_mode(session_id=session_id, mode_id=mode_id)

    async def set_config_option(
        self, config_id: str, value: str, timeout: float
    ) -> list[ConfigOption]:
        """``session/set_config_option``; the agent's whole set of options after it."""
        with anyio.fail_after(timeout):
            conn, session_id = self._connection()
            response = await conn.set_config_option(
                config_id=config_id, session_id=session_id, value=value
            )
        return list(response.config_options)

    async def set_model(self, model_id: str, timeout: float) -> None:
        """``session/set_model`` (unstable, absent from the SDK 0.12.1: sent as is)."""
        with anyio.fail_after(timeout):
            conn, session_id = self._connection()
            await conn._conn.send_request(
                "session/set_model", {"sessionId": session_id, "modelId": model_id}
            )

    async def stop(self, stdin_grace: float, sigterm_grace: float) -> ExitStatus | None:
        status = None
        if self.process is not None:
            status = await self.process.terminate(
                stdin_grace=stdin_grace, sigterm_grace=sigterm_grace
            )
        if self._conn is not None:
            conn, self._conn = self._conn, None
            with anyio.move_on_after(2):
                await conn.close()
        if self.process is not None:
            await self.process.release()
        return status
