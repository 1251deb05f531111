"""The session's MCP servers for the Copilot CLI (the SDK's ``mcp_servers``), and which
of them it could not start, read from its events: a server is settled once it has
tools or a final status (a stdio server may stay ``pending`` in the CLI's status after
its tools are loaded, so its tools are what tell it started)."""

from __future__ import annotations

from collections.abc import Sequence

from copilot import MCPServerConfig
from copilot.generated.rpc import MCPServer
from copilot.session_events import (
    McpServerStatus,
    SessionMcpServerStatusChangedData,
    SessionMcpServerToolsLoadedData,
)

from rawp_adapters import McpServer

CONNECT_TIMEOUT = 30.0
"""Seconds the CLI has to start the servers before those still unsettled are reported."""
_STARTED = (McpServerStatus.CONNECTED,)
_WAITING = (McpServerStatus.PENDING, McpServerStatus.STOPPED)


def mcp_config(server: McpServer) -> MCPServerConfig:
    """The SDK's config of one MCP server, every tool of it offered."""
    if server.command is not None:
        return {
            "type": "stdio",
            "command": server.command,
            "args": server.args,
            "env": server.env,
            "tools": ["*"],
        }
    assert server.url is not None
    return {"type": "http", "url": server.url, "headers": server.headers, "tools": ["*"]}


class McpStartup:
    def __init__(self, names: Sequence[str]) -> None:
        self._unsettled = set(names)
        self._refused: dict[str, str] = {}

    @property
    def settled(self) -> bool:
        return not self._unsettled

    def listed(self, servers: Sequence[MCPServer]) -> None:
        """The CLI's status list (``session.rpc.mcp.list``)."""
        for server in servers:
            self._status(server.name, server.status, server.error)

    def event(self, data: object) -> None:
        """A session event: a server's status changed, or its tools were loaded."""
        if isinstance(data, SessionMcpServerToolsLoadedData):
            self._unsettled.discard(data.server_name)
        elif isinstance(data, SessionMcpServerStatusChangedData):
            self._status(data.server_name, data.status, data.error)

    def _status(self, name: str, status: McpServerStatus, error: str | None) -> None:
        if name not in self._unsettled or status in _WAITING:
            return
        self._unsettled.discard(name)
        if status not in _STARTED:
            self._refused[name] = error or f"the Copilot CLI reports it {status.value}"

    def refused(self) -> dict[str, str]:
        """Each server the CLI did not start, and why."""
        late = dict.fromkeys(
            sorted(self._unsettled), f"the Copilot CLI did not start it in {CONNECT_TIMEOUT:g} s"
        )
        return self._refused | late
