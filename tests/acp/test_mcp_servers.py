"""The session's MCP servers on real ACP agents (``mcpServers`` of ``session/new``):
claude-agent-acp and gemini-cli get a stdio server and a streamable HTTP one (with its
header) whose tools the scripted model calls, beside a server that exits at once, which
they leave out while the session goes on; omp refuses ``session/new`` over such a server, so it is
asked again without it and the server is named in a warning. Each runs on one event
loop: how the adapter runs on each does not depend on MCP (the other ACP tests prove
both)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rawp_adapters import AgentMetadata, create_adapter
from rawp_adapters.frames import AgentErrorFrame, SessionCapabilitiesFrame, ToolInvokeResultFrame
from rawp_adapters.testing import allow_all, drive
from tests.acp.agents import AcpAgentName, acp_available, acp_settings, wire_format
from tests.support.mcp_server import (
    LOCAL_TOOL,
    REMOTE_TOOL,
    SECRET,
    http_server,
    servers_beside_a_dead_one,
    stamped,
)

pytestmark = [pytest.mark.anyio, pytest.mark.acp]

TIMEOUT = 90.0


def adapter_with_mcp(
    name: AcpAgentName, servers: dict[str, str], home: Path, **settings_extra: Any
) -> tuple[Any, Path]:
    if not acp_available(name):
        pytest.skip(f"{name} is not installed: run scripts/install-acp-peers")
    settings, workspace = acp_settings(
        name, llm_url=servers[wire_format(name)], home=home, **settings_extra
    )
    # Claude Code offers MCP tools only through its ToolSearch tool unless told not to;
    # gemini-cli starts MCP servers only in a trusted workspace.
    settings["env"].update({"ENABLE_TOOL_SEARCH": "false", "GEMINI_CLI_TRUST_WORKSPACE": "true"})
    metadata = AgentMetadata(adapter_type="process", settings={"protocol": "acp", **settings})
    return create_adapter(metadata), workspace


@pytest.mark.parametrize(
    ("name", "tool_name", "loop"),
    [("claude", "mcp__{server}__{tool}", "asyncio"), ("gemini", "mcp_{server}_{tool}", "trio")],
)
async def test_the_agent_calls_mcp_tools_over_stdio_and_http_beside_a_dead_server(
    name: AcpAgentName,
    tool_name: str,
    loop: str,
    anyio_backend: str,
    servers: dict[str, str],
    tmp_path: Path,
) -> None:
    if anyio_backend != loop:
        pytest.skip(f"{name} runs this on {loop} only (see the module docstring)")
    with http_server(header=SECRET, tool=REMOTE_TOOL) as url:
        adapter, workspace = adapter_with_mcp(
            name, servers, tmp_path, mcp_servers=servers_beside_a_dead_one(url)
        )
        async with drive(adapter, workspace=workspace, policy=allow_all, timeout=TIMEOUT) as d:
            turns = []
            for server, tool, text in (
                ("local", LOCAL_TOOL, "abc"),
                ("remote", REMOTE_TOOL, "xyz"),
            ):
                called = tool_name.format(server=server, tool=tool)
                turns.append((await d.prompt(f'CALL_TOOL {called} {{"text": "{text}"}}'), text))
            (capabilities,) = d.of_type(SessionCapabilitiesFrame)
    assert capabilities.payload.features.mcp_servers == ["dead", "local", "remote"]
    for turn, text in turns:
        results = turn.of_type(ToolInvokeResultFrame)
        assert results
        assert not results[-1].payload.is_error
        assert stamped(text) in turn.text


async def test_omp_refusing_the_session_over_a_dead_server_gets_it_without_that_one(
    anyio_backend: str, servers: dict[str, str], tmp_path: Path
) -> None:
    if anyio_backend != "trio":
        pytest.skip("runs on trio only (see the module docstring)")
    with http_server(header=SECRET, tool=REMOTE_TOOL) as url:
        adapter, workspace = adapter_with_mcp(
            "omp", servers, tmp_path, mcp_servers=servers_beside_a_dead_one(url)
        )
        async with drive(adapter, workspace=workspace, policy=allow_all, timeout=TIMEOUT) as d:
            turn = await d.prompt("Say hello.")
            (capabilities,) = d.of_type(SessionCapabilitiesFrame)
            (warning,) = d.of_type(AgentErrorFrame)
    assert capabilities.payload.features.mcp_servers == ["local", "remote"]
    assert warning.payload.severity == "warning"
    assert "'dead'" in warning.payload.message
    assert turn.stop_reason == "end_turn"
