"""The Copilot SDK's client and session, on the SDK's loop: the CLI started against the
provider of the options (``COPILOT_OFFLINE``, no GitHub login), the core's own tools,
and the CLI's events and permission questions handed to the running turn."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any, Literal

from copilot import (
    CopilotClient,
    CopilotSession,
    PermissionRequest,
    ProviderConfig,
    RuntimeConnection,
    SessionEvent,
    Tool,
    ToolInvocation,
    ToolSet,
)
from copilot._jsonrpc import ProcessExitedError
from copilot.generated.rpc import (
    HistoryCompactResult,
    PermissionDecision,
    PermissionDecisionReject,
    SessionHistoryCompactRequest,
    Trigger,
)
from copilot.session import PermissionInvocation
from copilot.session_events import SessionIdleData
from copilot.tools import ToolResult
from rawp_adapter_sdk import CoreError
from rawp_adapter_sdk.islands import Outbox

from rawp_adapters import McpServer
from rawp_adapters.frames import HostTool
from rawp_core_copilot._exit import CliExited, exit_error
from rawp_core_copilot._mcp import CONNECT_TIMEOUT, McpStartup, mcp_config
from rawp_core_copilot._translate import TRANSLATED

WRITE_TOOL = "write"
BUILTIN_TOOLS = (WRITE_TOOL,)
LOGIN_VARIABLES = ("GH_TOKEN", "GITHUB_TOKEN", "COPILOT_GITHUB_TOKEN", "COPILOT_SDK_AUTH_TOKEN")
"""Never handed to the CLI: it runs on the provider of the options, logged in to nothing."""
NO_TURN = "No prompt is running."
SendMode = Literal["immediate", "enqueue"]


@dataclass(frozen=True, slots=True)
class Settings:
    model: str
    base_url: str
    api_key: str
    provider_type: Literal["openai", "azure", "anthropic"]
    wire_api: Literal["completions", "responses"]
    tools: Sequence[str]
    cli: Path
    home: Path
    """The CLI's ``COPILOT_HOME`` (its config, sessions and logs), the core's own."""
    workspace: Path
    mcp_servers: Sequence[McpServer] = ()


@dataclass(frozen=True, slots=True)
class Asked:
    """A permission question of the CLI; ``answer`` (on the SDK's loop) replies to it."""

    request: PermissionRequest
    answer: asyncio.Future[PermissionDecision]


@dataclass(frozen=True, slots=True)
class HostCalled:
    """The model called a tool the Master published; ``answer`` (on the SDK's loop)
    returns its result to the CLI."""

    call_id: str
    tool_name: str
    arguments: Any
    answer: asyncio.Future[ToolResult]


def _inside(workspace: Path, path: str) -> Path | None:
    relative = PurePath(path)
    target = (workspace / relative).resolve()
    if relative.is_absolute() or not target.is_relative_to(workspace.resolve()):
        return None
    return target


def _write_tool(workspace: Path) -> Tool:
    def write(invocation: ToolInvocation) -> ToolResult:
        arguments = invocation.arguments if isinstance(invocation.arguments, dict) else {}
        path, content = arguments.get("path"), arguments.get("content")
        if not isinstance(path, str) or not isinstance(content, str):
            return ToolResult("write needs a path and a content", result_type="failure")
        target = _inside(workspace, path)
        if target is None:
            return ToolResult(f"{path!r} is not a path inside the workspace", result_type="failure")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content, encoding="utf-8")
        except OSError as exc:
            return ToolResult(f"could not write {path}: {exc}", result_type="failure")
        return ToolResult(f"Wrote {len(content)} characters to {path}.")

    return Tool(
        name=WRITE_TOOL,
        description="Write content to the file at path (relative to the workspace), replacing it.",
        handler=write,
        parameters={
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["path", "content"],
        },
    )


def cli_environment(settings: Settings) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in LOGIN_VARIABLES}
    return env | {
        "COPILOT_OFFLINE": "true",
        "COPILOT_PROVIDER_BASE_URL": settings.base_url,
        "COPILOT_PROVIDER_TYPE": settings.provider_type,
        "COPILOT_PROVIDER_API_KEY": settings.api_key,
        "COPILOT_MODEL": settings.model,
    }


class Runtime:
    """Made, used and closed on the SDK's loop."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._client: CopilotClient | None = None
        self._session: CopilotSession | None = None
        self._inbox: Outbox[Any] | None = None
        self._exited: CoreError | None = None
        self._cli_process: Any = None
        self._idle = True
        """The session has told its last turn idle: a message now would start a new one."""
        self.host_tools: Sequence[HostTool] = ()
        """The Master's published tools; :meth:`publish` changes them once open."""
        self.mcp = McpStartup([server.name for server in settings.mcp_servers])
        self._mcp_changed = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None

    async def open(self) -> None:
        s = self._settings
        self._loop = asyncio.get_running_loop()
        self._client = CopilotClient(
            connection=RuntimeConnection.for_stdio(path=str(s.cli)),
            env=cli_environment(s),
            use_logged_in_user=False,
            base_directory=str(s.home),
            working_directory=str(s.workspace),
            log_level="error",
        )
        await self._client.start()
        self._watch_exit(self._client)
        provider: ProviderConfig = {
            "type": s.provider_type,
            "wire_api": s.wire_api,
            "base_url": s.base_url,
            "api_key": s.api_key,
        }
        self._session = await self._client.create_session(
            on_permission_request=self._on_permission,
            model=s.model,
            provider=provider,
            tools=self._tools(),
            # the core's tools and the MCP servers', none of the CLI's own
            available_tools=ToolSet().add_custom("*").add_mcp("*"),
            mcp_servers={server.name: mcp_config(server) for server in s.mcp_servers},
            streaming=True,
            working_directory=str(s.workspace),
            on_event=self._on_event,
        )
        if not self.mcp.settled:
            self.mcp.listed((await self._session.rpc.mcp.list()).servers)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(CONNECT_TIMEOUT):
                    while not self.mcp.settled:
                        await self._mcp_changed.wait()
                        self._mcp_changed.clear()
        self._loop = None  # later events change nothing the start reported

    def _watch_exit(self, client: CopilotClient) -> None:
        """Tell the running turn when the CLI's connection closes unasked (the CLI died).
        The SDK tells only itself (its JSON-RPC client's ``on_close``, called from its
        reader thread, not on :meth:`close`), so the core chains its own call to it."""
        rpc = client._client
        if rpc is None:
            return
        self._cli_process = rpc.process
        previous = rpc.on_close

        def closed() -> None:
            if previous is not None:
                previous()
            self._exited = exit_error(rpc.process)
            inbox = self._inbox
            if inbox is not None:
                inbox.put_last(CliExited(self._exited))

        rpc.on_close = closed

    def _tools(self) -> list[Tool]:
        own = [_write_tool(self._settings.workspace)] if WRITE_TOOL in self._settings.tools else []
        return own + [self._host_tool(tool) for tool in self.host_tools]

    def _host_tool(self, tool: HostTool) -> Tool:
        async def call(invocation: ToolInvocation) -> ToolResult:
            inbox = self._inbox
            if inbox is None:
                return ToolResult(NO_TURN, result_type="failure")
            answer: asyncio.Future[ToolResult] = asyncio.get_running_loop().create_future()
            inbox.put(HostCalled(invocation.tool_call_id, tool.name, invocation.arguments, answer))
            return await answer

        return Tool(
            name=tool.name,
            description=tool.description,
            handler=call,
            parameters=dict(tool.input_schema),
            skip_permission=True,  # the session asks the Master before it calls the tool
        )

    async def publish(self, tools: Sequence[HostTool]) -> None:
        self.host_tools = list(tools)
        if self._session is not None:
            await self._session.set_tools(self._tools())

    def _on_event(self, event: SessionEvent) -> None:
        if not self.mcp.settled and self._loop is not None:  # events may come from any thread
            self._loop.call_soon_threadsafe(self._mcp_event, event.data)
        if isinstance(event.data, SessionIdleData):
            self._idle = True
        if self._inbox is not None and isinstance(event.data, TRANSLATED):
            self._inbox.put(event)

    def _mcp_event(self, data: object) -> None:
        self.mcp.event(data)
        self._mcp_changed.set()

    async def _on_permission(
        self, request: PermissionRequest, invocation: PermissionInvocation
    ) -> PermissionDecision:
        del invocation
        inbox = self._inbox
        if inbox is None:
            return PermissionDecisionReject(feedback=NO_TURN)
        answer: asyncio.Future[PermissionDecision] = asyncio.get_running_loop().create_future()
        inbox.put(Asked(request, answer))
        return await answer

    async def send(self, prompt: str, inbox: Outbox[Any]) -> None:
        assert self._session is not None, "send() before open()"
        self._inbox = inbox
        if self._exited is not None:
            raise self._exited
        self._idle = False
        try:
            await self._session.send(prompt)
        except ProcessExitedError as exc:  # the CLI died, its reader not yet told
            self._exited = exit_error(self._cli_process)
            raise self._exited from exc

    async def steer(self, text: str, mode: SendMode) -> None:
        """Pass ``text`` into the running turn: ``immediate`` at the agent's next step,
        ``enqueue`` once it is done with what it has."""
        assert self._session is not None, "steer() before open()"
        if self._idle:
            raise CoreError("the turn has ended: the message would start another")
        await self._session.send(text, mode=mode)

    async def set_model(self, model: str) -> None:
        assert self._session is not None, "set_model() before open()"
        await self._session.set_model(model)

    async def compact(self, instructions: str | None) -> HistoryCompactResult:
        assert self._session is not None, "compact() before open()"
        request = SessionHistoryCompactRequest(
            custom_instructions=instructions, trigger=Trigger.MANUAL
        )
        return await self._session.rpc.history.compact(request)

    def end_turn(self) -> None:
        self._inbox = None

    async def abort(self) -> None:
        if self._session is not None:
            await self._session.abort()

    async def close(self) -> None:
        session, client = self._session, self._client
        self._session = self._client = None
        if self._exited is not None:
            if client is not None:
                await client.force_stop()  # nothing to disconnect from
            return
        try:
            if session is not None:
                await session.disconnect()
        finally:
            if client is not None:
                await client.stop()


def describe(request: PermissionRequest) -> tuple[str, dict[str, Any], str | None]:
    """The tool's name, input and call id of a permission question."""
    data = request.to_dict()
    name = data.get("toolName") or str(data.get("kind", "tool"))
    arguments = data.get("args") if "args" in data else data
    call_id = data.get("toolCallId")
    return (
        str(name),
        arguments if isinstance(arguments, dict) else {"input": arguments},
        call_id if isinstance(call_id, str) else None,
    )
