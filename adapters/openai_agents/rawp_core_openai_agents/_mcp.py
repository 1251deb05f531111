"""The session's MCP servers as the SDK's (``agents.mcp``), connected on the island.

Each server is connected in a task of its own (the manager's ``connect_in_parallel``),
so its cleanup may come from another task; one that fails is left out with why."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from agents.mcp import MCPServer, MCPServerManager, MCPServerStdio, MCPServerStreamableHttp

from rawp_adapters import McpServer

CONNECT_TIMEOUT = 30.0
"""Seconds a server has to start and answer ``initialize`` (a cold ``npx`` is slow)."""


def _sdk_server(server: McpServer, workspace: Path) -> MCPServer:
    if server.command is not None:
        return MCPServerStdio(
            {"command": server.command, "args": server.args, "env": server.env, "cwd": workspace},
            name=server.name,
            client_session_timeout_seconds=CONNECT_TIMEOUT,
        )
    assert server.url is not None
    return MCPServerStreamableHttp(
        {"url": server.url, "headers": server.headers},
        name=server.name,
        client_session_timeout_seconds=CONNECT_TIMEOUT,
    )


async def connect(
    servers: Sequence[McpServer], workspace: Path
) -> tuple[MCPServerManager, dict[str, str]]:
    """On the island: the connected servers' manager, and the servers it could not
    connect, by name, with why."""
    manager = MCPServerManager(
        [_sdk_server(s, workspace) for s in servers],
        connect_timeout_seconds=CONNECT_TIMEOUT,
        connect_in_parallel=True,
    )
    await manager.connect_all()
    refused = {s.name: str(e) or type(e).__name__ for s, e in manager.errors.items()}
    return manager, refused
