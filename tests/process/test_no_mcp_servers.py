"""MCP servers given to an RPC agent other than omp (which takes none) are each named
in an ``agent.error`` warning; the session starts and goes on."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from rawp_adapters.frames import AgentErrorFrame, SessionCapabilitiesFrame
from rawp_adapters.testing import drive
from tests.process.helpers import fake_adapter

pytestmark = pytest.mark.anyio

SERVERS = [
    {"name": "local", "command": sys.executable, "args": ["-c", "pass"]},
    {"name": "remote", "url": "http://127.0.0.1:9/mcp"},
]


async def test_mcp_servers_an_agent_other_than_omp_cannot_take_are_each_named_in_a_warning(
    tmp_path: Path,
) -> None:
    async with drive(fake_adapter(mcp_servers=SERVERS), workspace=tmp_path) as d:
        turn = await d.prompt("hello")
        (capabilities,) = d.of_type(SessionCapabilitiesFrame)
        warnings = d.of_type(AgentErrorFrame)
    assert capabilities.payload.features.mcp_servers == []
    assert [w.payload.severity for w in warnings] == ["warning", "warning"]
    assert "'local'" in warnings[0].payload.message
    assert "takes no MCP servers over RPC (only omp does)" in warnings[0].payload.message
    assert "'remote'" in warnings[1].payload.message
    assert turn.stop_reason == "end_turn"
