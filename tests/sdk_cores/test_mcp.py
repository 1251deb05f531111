"""The session's MCP servers on each SDK core: a stdio server and a streamable HTTP one
(with its header) whose tools the scripted model calls, beside a server that exits at
once, reported and left out while the others work; the demo core, which takes none,
says so."""

from __future__ import annotations

from pathlib import Path

import pytest
from rawp_adapter_sdk import SdkAdapter

from rawp_adapters.frames import AgentErrorFrame, SessionCapabilitiesFrame
from rawp_adapters.testing import drive
from tests.support.core_scenarios import CORES, ScriptedCore
from tests.support.llm_openai import TOOL_SAID, ScriptedOpenAI
from tests.support.mcp_checks import call_both_servers
from tests.support.mcp_server import (
    LOCAL_TOOL,
    REMOTE_TOOL,
    SECRET,
    http_server,
    servers_beside_a_dead_one,
)

pytestmark = pytest.mark.anyio

TOOL_NAMES = {"copilot": "{server}-{tool}"}
"""How a core names an MCP server's tool to the model (default: the tool's own name)."""


@pytest.mark.parametrize("core", CORES, ids=[core.name for core in CORES])
async def test_mcp_tools_over_stdio_and_http_reach_the_model_and_a_dead_server_is_reported(
    core: ScriptedCore, llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    named = TOOL_NAMES.get(core.name, "{tool}")
    with http_server(header=SECRET, tool=REMOTE_TOOL) as url:
        settings = core.settings(llm) | {"mcp_servers": servers_beside_a_dead_one(url)}
        async with drive(SdkAdapter.from_settings(settings), workspace=tmp_path) as d:
            await call_both_servers(
                d,
                named.format(server="local", tool=LOCAL_TOOL),
                named.format(server="remote", tool=REMOTE_TOOL),
                said=TOOL_SAID,
                requests=lambda: llm.requests,
            )


async def test_a_core_that_takes_no_mcp_servers_names_each_in_a_warning_and_goes_on(
    tmp_path: Path,
) -> None:
    settings = {"mcp_servers": servers_beside_a_dead_one("http://127.0.0.1:9/mcp")}
    async with drive(SdkAdapter.from_settings(settings), workspace=tmp_path) as d:
        turn = await d.prompt("hello")
        (capabilities,) = d.of_type(SessionCapabilitiesFrame)
        warnings = d.of_type(AgentErrorFrame)
    assert capabilities.payload.features.mcp_servers == []
    assert [w.payload.severity for w in warnings] == ["warning"] * 3
    assert all("takes no MCP servers" in w.payload.message for w in warnings)
    assert turn.stop_reason == "end_turn"
