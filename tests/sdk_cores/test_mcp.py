"""The session's MCP servers on each SDK core: a stdio server and a streamable HTTP one
(with its header) whose tools the scripted model calls, beside a server that exits at
once, reported and left out while the others work; a core that takes none says so."""

from __future__ import annotations

from pathlib import Path

import pytest
from rawp_adapter_sdk import SdkAdapter

from rawp_adapters.frames import AgentErrorFrame, SessionCapabilitiesFrame
from rawp_adapters.testing import allow_all, drive
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

TAKES_MCP = {"openai-agents", "pydantic-ai"}


def cores(takes_mcp: bool) -> pytest.MarkDecorator:
    chosen = [core for core in CORES if (core.name in TAKES_MCP) == takes_mcp]
    return pytest.mark.parametrize("core", chosen, ids=[core.name for core in chosen])


@cores(takes_mcp=True)
async def test_mcp_tools_over_stdio_and_http_reach_the_model_and_a_dead_server_is_reported(
    core: ScriptedCore, llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    with http_server(header=SECRET, tool=REMOTE_TOOL) as url:
        settings = core.settings(llm) | {"mcp_servers": servers_beside_a_dead_one(url)}
        async with drive(SdkAdapter.from_settings(settings), workspace=tmp_path) as d:
            await call_both_servers(d, LOCAL_TOOL, REMOTE_TOOL, said=TOOL_SAID)


@cores(takes_mcp=False)
async def test_a_core_that_takes_no_mcp_servers_names_each_in_a_warning_and_goes_on(
    core: ScriptedCore, llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    settings = core.settings(llm) | {
        "mcp_servers": servers_beside_a_dead_one("http://127.0.0.1:9/mcp")
    }
    async with drive(SdkAdapter.from_settings(settings), workspace=tmp_path, policy=allow_all) as d:
        turn = await d.prompt("hello")
        (capabilities,) = d.of_type(SessionCapabilitiesFrame)
        warnings = d.of_type(AgentErrorFrame)
    assert capabilities.payload.features.mcp_servers == []
    assert [w.payload.severity for w in warnings] == ["warning"] * 3
    assert all("takes no MCP servers" in w.payload.message for w in warnings)
    assert turn.stop_reason == "end_turn"
