"""The copilot core through ``rawp-adapters serve --stdio``, a Master at the other end of
the pipes: a write the Copilot CLI asks about, allowed, on both loops."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rawp_adapters.testing import assert_valid_stream
from tests.cli.conftest import serve
from tests.copilot.sessions import core_settings
from tests.support.core_scenarios import allow_on_bridge
from tests.support.llm_openai import TOOL_SAID, ScriptedOpenAI

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
async def test_a_master_on_the_stdio_bridge_allows_a_write_the_cli_asks_about(
    llm: ScriptedOpenAI, copilot_cli: Path, tmp_path: Path, backend: str
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    settings = core_settings(llm, copilot_cli)
    args = ("--backend", backend, "--adapter", "sdk", "--settings-json", json.dumps(settings))
    async with serve(*args, env=None, cwd=workspace, stderr=tmp_path / "err") as bridge:
        capabilities = await bridge.next_frame()
        assert capabilities["payload"]["agent"]["name"] == "copilot"
        await bridge.send(
            "control.prompt.request", {"prompt_id": "p1", "text": "WRITE_FILE a.txt hi"}, seq=1
        )
        await allow_on_bridge(bridge, seq=2)
        wrote = await bridge.until("session.turn.end")
        await bridge.close_stdin()
        frames = await bridge.rest()
        assert await bridge.exit_code() == 0
    assert wrote["payload"]["stop_reason"] == "end_turn"
    assert (workspace / "a.txt").read_text(encoding="utf-8") == "hi"
    said = "".join(f["payload"]["text"] for f in frames if f["type"] == "agent.text.delta")
    assert f"{TOOL_SAID}Wrote 2 characters to a.txt." in said
    assert_valid_stream(frames)
