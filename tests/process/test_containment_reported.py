"""``session.capabilities`` says how the agent's processes are kept from outliving the
session, as the process adapter actually confined it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from rawp_adapter_process import ProcessAdapter

from rawp_adapters.frames import SessionCapabilitiesFrame
from rawp_adapters.processes import CONTAINMENT_VAR
from rawp_adapters.testing import drive

pytestmark = pytest.mark.anyio

READY_AGENT = """
import sys
print('{"type": "ready"}', flush=True)
for _ in sys.stdin:
    pass
"""


@pytest.mark.parametrize("cap", ["subreaper", "tree-snapshot"])
async def test_capabilities_name_the_containment_the_agent_runs_under(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cap: str
) -> None:
    monkeypatch.setenv(CONTAINMENT_VAR, cap)
    agent = tmp_path / "agent.py"
    agent.write_text(READY_AGENT)
    # it answers no command: what it can do is asked for command_timeout before it starts
    adapter = ProcessAdapter.from_settings(
        {"command": [sys.executable, str(agent)], "command_timeout": 1.0}
    )
    async with drive(adapter, workspace=tmp_path) as d:
        capabilities = await d.wait_for(SessionCapabilitiesFrame)
        assert capabilities.payload.features.process_containment == cap
