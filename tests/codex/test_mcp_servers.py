"""The session's MCP servers on the real Codex app-server (``mcp_servers.<name>`` of its
config): a stdio server and a streamable HTTP one (with its header) whose tools the
scripted model calls once the Master allows them (codex asks through an MCP
elicitation), beside a server that exits at once, reported while the others work."""

from __future__ import annotations

from pathlib import Path

import pytest

from rawp_adapters.frames import InteractionRequestFrame, ToolInvokeResultFrame
from rawp_adapters.testing import allow_all, deny_all, drive
from tests.codex.sessions import TIMEOUT, make_adapter
from tests.support.llm_responses import ScriptedResponses
from tests.support.mcp_checks import call_both_servers
from tests.support.mcp_server import (
    LOCAL_TOOL,
    REMOTE_TOOL,
    SECRET,
    http_server,
    servers_beside_a_dead_one,
    stamped,
)

pytestmark = [pytest.mark.anyio, pytest.mark.codex]


async def test_mcp_tools_over_stdio_and_http_run_once_allowed_and_a_dead_server_is_reported(
    codex_bin: Path, llm: ScriptedResponses, tmp_path: Path
) -> None:
    with http_server(header=SECRET, tool=REMOTE_TOOL) as url:
        servers = servers_beside_a_dead_one(url)
        adapter, workspace = make_adapter(codex_bin, llm, tmp_path, mcp_servers=servers)
        async with drive(adapter, workspace=workspace, policy=allow_all, timeout=TIMEOUT) as d:
            await call_both_servers(d, LOCAL_TOOL, REMOTE_TOOL, requests=lambda: llm.requests)
            d.policy = deny_all
            denied = await d.prompt(f'CALL_TOOL {LOCAL_TOOL} {{"text": "no"}}')
    (asked,) = denied.of_type(InteractionRequestFrame)
    assert asked.payload.interaction_type == "PERMISSION"
    assert asked.payload.context is not None
    assert asked.payload.context.tool_name == f"local/{LOCAL_TOOL}"
    (result,) = denied.of_type(ToolInvokeResultFrame)
    assert result.payload.is_error
    assert stamped("no") not in denied.text
