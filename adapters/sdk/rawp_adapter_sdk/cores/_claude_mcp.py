"""The session's MCP servers for the Claude Code CLI (``ClaudeAgentOptions.mcp_servers``)
and those it could not connect, read from its live status (``get_mcp_status``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import anyio

from rawp_adapters import McpServer

if TYPE_CHECKING:
    from claude_agent_sdk import ClaudeSDKClient

CONNECT_TIMEOUT = 30.0
"""Seconds the CLI has to connect the servers before those still pending are reported."""
_POLL = 0.1


def cli_config(servers: Sequence[McpServer]) -> dict[str, Any]:
    """The CLI's ``mcpServers`` entries, by name."""
    config: dict[str, Any] = {}
    for server in servers:
        if server.command is not None:
            config[server.name] = {
                "type": "stdio",
                "command": server.command,
                "args": server.args,
                "env": server.env,
            }
        else:
            config[server.name] = {"type": "http", "url": server.url, "headers": server.headers}
    return config


async def refused(client: ClaudeSDKClient, names: Sequence[str]) -> dict[str, str]:
    """The servers of ``names`` the CLI did not connect, with their status, once none is
    pending (or :data:`CONNECT_TIMEOUT` has passed)."""
    statuses: dict[str, str] = {}
    with anyio.move_on_after(CONNECT_TIMEOUT):
        while True:
            response = await client.get_mcp_status()
            listed = response["mcpServers"]
            statuses = {s["name"]: str(s.get("status")) for s in listed if s["name"] in names}
            if all(statuses.get(n, "pending") != "pending" for n in names):
                break
            await anyio.sleep(_POLL)  # the CLI tells no event when a server is connected
    return {
        name: f"the Claude Code CLI reports it {statuses.get(name, 'pending')}"
        for name in names
        if statuses.get(name) != "connected"
    }
