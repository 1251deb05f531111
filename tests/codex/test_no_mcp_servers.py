"""MCP servers the codex adapter cannot give codex yet are each named in an
``agent.error`` warning; the session starts and goes on (the fake app-server)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from rawp_adapter_codex import CodexAdapter

from rawp_adapters.frames import AgentErrorFrame, SessionCapabilitiesFrame
from rawp_adapters.testing import drive

pytestmark = pytest.mark.anyio

FAKE = Path(__file__).with_name("fake_app_server.py")


async def test_mcp_servers_it_cannot_give_are_each_named_in_a_warning(tmp_path: Path) -> None:
    settings = {
        "command": [sys.executable, str(FAKE)],
        "mcp_servers": [{"name": "local", "command": sys.executable}],
    }
    async with drive(CodexAdapter.from_settings(settings), workspace=tmp_path, timeout=30) as d:
        warning = await d.wait_for(AgentErrorFrame)
        (capabilities,) = d.of_type(SessionCapabilitiesFrame)
    assert capabilities.payload.features.mcp_servers == []
    assert warning.payload.severity == "warning"
    assert "'local'" in warning.payload.message
