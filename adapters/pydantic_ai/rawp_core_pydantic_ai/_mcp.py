"""The session's MCP servers as pydantic-ai toolsets (``MCPToolset``), held connected
on the island for the session by a task of their own: a toolset is left by the task
that entered it, and a run's own entering only counts (the toolset stays connected).
A server that does not connect is left out, with why."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
from fastmcp.client.transports import StdioTransport
from pydantic_ai.mcp import MCPToolset

from rawp_adapters import McpServer

CONNECT_TIMEOUT = 30.0
"""Seconds a server has to start and answer ``initialize`` (a cold ``npx`` is slow)."""


def _toolset(server: McpServer, workspace: Path) -> MCPToolset[None]:
    if server.command is not None:
        transport = StdioTransport(
            server.command, server.args, env=server.env or None, cwd=str(workspace)
        )
        return MCPToolset(transport, id=server.name, init_timeout=CONNECT_TIMEOUT)
    return MCPToolset(
        server.url, id=server.name, headers=server.headers or None, init_timeout=CONNECT_TIMEOUT
    )


class McpToolsets:
    """The connected toolsets (:attr:`toolsets`) and those that failed
    (:attr:`refused`); made and closed on the island."""

    def __init__(self) -> None:
        self.toolsets: list[MCPToolset[None]] = []
        self.refused: dict[str, str] = {}
        self._stop = asyncio.Event()
        self._holder: asyncio.Task[None] | None = None

    @classmethod
    async def connect(cls, servers: Sequence[McpServer], workspace: Path) -> McpToolsets:
        held = cls()
        connected: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        # Not a job of the island's (an abort cancels those): it lives until close().
        held._holder = asyncio.create_task(held._hold(servers, workspace, connected))
        await connected
        return held

    async def _hold(
        self, servers: Sequence[McpServer], workspace: Path, connected: asyncio.Future[None]
    ) -> None:
        async with contextlib.AsyncExitStack() as stack:
            try:
                for server in servers:
                    toolset = _toolset(server, workspace)
                    try:
                        with anyio.fail_after(CONNECT_TIMEOUT):
                            await stack.enter_async_context(toolset)
                    except Exception as exc:
                        self.refused[server.name] = _describe(exc)
                    else:
                        self.toolsets.append(toolset)
            finally:
                connected.set_result(None)
            await self._stop.wait()

    async def close(self) -> None:
        self._stop.set()
        if self._holder is not None:
            with contextlib.suppress(Exception):
                await self._holder


def _describe(exc: BaseException) -> str:
    causes: list[Any] = [exc]
    while isinstance(causes[-1], BaseExceptionGroup) and causes[-1].exceptions:
        causes.append(causes[-1].exceptions[0])
    last = causes[-1]
    return str(last) or type(last).__name__
