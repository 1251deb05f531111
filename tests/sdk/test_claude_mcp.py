"""The session's MCP servers on the Claude core: a stdio server and a streamable HTTP one
(with its header) whose tools the scripted model calls, beside a server that exits at
once, which the CLI reports failed and the core names in a warning."""

from __future__ import annotations

from pathlib import Path

import pytest
from rawp_adapter_sdk import SdkAdapter

from rawp_adapters.testing import allow_all, drive
from tests.sdk.claude_sessions import claude_settings
from tests.support.claude import needs_claude_sdk
from tests.support.llm_anthropic import ScriptedAnthropic
from tests.support.mcp_checks import call_both_servers
from tests.support.mcp_server import (
    LOCAL_TOOL,
    REMOTE_TOOL,
    SECRET,
    http_server,
    servers_beside_a_dead_one,
)

pytestmark = [pytest.mark.anyio, needs_claude_sdk]


async def test_mcp_tools_over_stdio_and_http_reach_the_model_and_a_dead_server_is_reported(
    anyio_backend: str, tmp_path: Path
) -> None:
    if anyio_backend != "asyncio":
        pytest.skip("runs on asyncio only: the Claude core's tests prove both loops")
    with ScriptedAnthropic() as api, http_server(header=SECRET, tool=REMOTE_TOOL) as url:
        settings = claude_settings(api, tmp_path, 30_000)
        settings["mcp_servers"] = servers_beside_a_dead_one(url)
        workspace = tmp_path / "workspace"
        workspace.mkdir()
        adapter = SdkAdapter.from_settings(settings)
        async with drive(adapter, workspace=workspace, policy=allow_all, timeout=60) as d:
            await call_both_servers(d, f"mcp__local__{LOCAL_TOOL}", f"mcp__remote__{REMOTE_TOOL}")
