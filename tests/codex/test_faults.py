"""What the adapter does with an app-server that misbehaves (a fake one, a real process:
``tests/codex/fake_app_server.py``): bad lines and messages are reported as warnings and
the turn goes on; requests it does not serve are refused; a server without
``model/list`` lists no models."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from rawp_adapter_codex import CodexAdapter

from rawp_adapters.frames import AgentErrorFrame, SessionCapabilitiesFrame, SessionErrorFrame
from rawp_adapters.testing import drive
from tests.codex.fake_app_server import REFUSED

pytestmark = pytest.mark.anyio

FAKE = Path(__file__).with_name("fake_app_server.py")


async def test_bad_messages_are_warnings_unserved_requests_are_refused_and_the_turn_goes_on(
    tmp_path: Path,
) -> None:
    adapter = CodexAdapter.from_settings({"command": [sys.executable, str(FAKE)]})
    async with drive(adapter, workspace=tmp_path, timeout=30) as d:
        turn = await d.prompt("Say hello.")
        await d.send(d.control.list_models())
        no_models = await d.wait_for(SessionErrorFrame)

    assert turn.stop_reason == "end_turn"
    assert turn.text == f"{REFUSED}-32601"
    warnings = [(e.payload.severity, e.payload.error_code) for e in turn.of_type(AgentErrorFrame)]
    assert warnings == [("warning", "PROTOCOL_ERROR")] * 2
    (caps,) = d.of_type(SessionCapabilitiesFrame)
    assert caps.payload.agent is not None
    assert (caps.payload.agent.name, caps.payload.agent.version) == ("codex", "0.0.1")
    assert caps.payload.features.model_list is False
    assert no_models.payload.error_code == "UNSUPPORTED"
