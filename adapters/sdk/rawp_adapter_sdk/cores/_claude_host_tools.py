"""The Master's tools as an in-process MCP server of the Claude Agent SDK.

The CLI names them ``mcp__rawp__<name>``. It sends each call's ``tool_use`` id in the
request's ``_meta`` (``claudecode/toolUseId``), so the host call carries the model's
own id and the agent's own reports of it are recognised. The SDK's
``create_sdk_mcp_server`` validates input itself (and so would answer invalid input
before the Master's schema check sees it) and hides that id, hence a plain MCP server.
Streamed output does not reach the model (the SDK drops server notifications): it sees
the result only.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any

from claude_agent_sdk import McpSdkServerConfig
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
)

from rawp_adapter_sdk._core import HostToolCaller
from rawp_adapters import HostToolCall
from rawp_adapters.frames import HostTool

SERVER_NAME = "rawp"
TOOL_PREFIX = f"mcp__{SERVER_NAME}__"
"""How the agent names a host tool: ``mcp__rawp__<name>``."""
_TOOL_USE_ID = "claudecode/toolUseId"


def host_tool_name(agent_tool_name: str) -> str | None:
    """The Master's name of the agent's tool ``agent_tool_name``, if it is a host tool."""
    if agent_tool_name.startswith(TOOL_PREFIX):
        return agent_tool_name[len(TOOL_PREFIX) :]
    return None


class HostToolServer:
    """Serves the published catalog; each call goes to ``call_host_tool``, asking the
    Master's permission first when ``needs_permission(tool_use_id)`` says the CLI's
    permission gate held it."""

    def __init__(
        self, call_host_tool: HostToolCaller, needs_permission: Callable[[str], bool]
    ) -> None:
        self._call_host_tool = call_host_tool
        self._needs_permission = needs_permission
        self._tools: list[Tool] = []
        self.server: Server[Any] = Server(
            SERVER_NAME, version="1", on_list_tools=self._list, on_call_tool=self._call
        )

    @property
    def config(self) -> McpSdkServerConfig:
        return McpSdkServerConfig(type="sdk", name=SERVER_NAME, instance=self.server)

    def publish(self, tools: Sequence[HostTool]) -> None:
        self._tools = [
            Tool(name=t.name, description=t.description, input_schema=t.input_schema) for t in tools
        ]

    async def _list(
        self, ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        return ListToolsResult(tools=self._tools)

    async def _call(
        self, ctx: ServerRequestContext[Any], params: CallToolRequestParams
    ) -> CallToolResult:
        meta: dict[str, Any] = dict(params.meta or {})
        tool_use_id = meta.get(_TOOL_USE_ID)
        if not isinstance(tool_use_id, str) or not tool_use_id:
            tool_use_id = f"rawp-host-{uuid.uuid4()}"
        call = HostToolCall(
            tool_use_id,
            params.name,
            params.arguments or {},
            permission=self._needs_permission(tool_use_id),
        )
        outcome = await self._call_host_tool(call, None)
        return CallToolResult(content=[TextContent(text=outcome.text)], is_error=outcome.is_error)
