"""The session's MCP servers for omp (omp 18: ``enableMCP`` in RPC mode).

omp reads no MCP server from its command line, only from ``.mcp.json`` files: the
adapter writes one into a directory of the session's own (removed at its end) and gives
omp that directory as an extension root (``-e <dir>``), whose ``.mcp.json`` omp loads
even under ``--no-extensions``; nothing is written into the user's agent dir or the
workspace. omp starts each server itself (a stdio server with omp's environment, the
session's env policy applied, plus the server's ``env``).

omp offers an MCP tool as an ``xd://`` device (``xd://mcp__<server>_<tool>``, listed in
its system prompt): the model writes the tool's JSON arguments as ``content`` to that
path with omp's ``write`` tool. omp connects the servers in the background and tells
nothing of one that failed over RPC, so the session waits until each server's tools show
in omp's ``get_state`` (its system prompt and tools) or ``mcp_start_timeout`` passes."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rawp_adapters import McpServer

MCP_AGENT = "omp"
"""The one RPC agent the adapter gives MCP servers (xcsh disables MCP; pi has none)."""
CONFIG_NAME = ".mcp.json"


def mcp_json(servers: Sequence[McpServer]) -> dict[str, Any]:
    """omp's ``.mcp.json`` for ``servers``."""
    config: dict[str, Any] = {}
    for server in servers:
        if server.command is not None:
            config[server.name] = {
                "command": server.command,
                "args": server.args,
                "env": server.env,
            }
        else:
            config[server.name] = {"type": "http", "url": server.url, "headers": server.headers}
    return {"mcpServers": config}


def tool_prefix(server: str) -> str:
    """How omp 18.2.3 begins the names of a server's tools (``mcp/tool-bridge.ts``)."""
    sanitized = re.sub(r"_+", "_", re.sub(r"[^a-z0-9_]+", "_", server.lower())).strip("_")
    return f"mcp__{sanitized or 'server'}_"


def loaded(servers: Sequence[str], state: str) -> list[str]:
    """The servers some tool of which ``state`` (omp's ``get_state`` answer) names."""
    return [name for name in servers if tool_prefix(name) in state]


def write_config_dir(servers: Sequence[McpServer]) -> Path:
    """A new directory holding the ``.mcp.json`` of ``servers``."""
    directory = Path(tempfile.mkdtemp(prefix="rawp-omp-mcp-"))
    (directory / CONFIG_NAME).write_text(json.dumps(mcp_json(servers)), encoding="utf-8")
    return directory


def remove_config_dir(directory: Path) -> None:
    shutil.rmtree(directory, ignore_errors=True)
