"""The openai-agents core through ``rawp-adapters serve --stdio`` (a subprocess, its
settings given with ``--setting`` as on a command line), a Master at the other end of
the pipes: a text turn, a write the Master allows, a host tool the Master answers, on
the session's loop of the test (asyncio or trio)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rawp_adapters.testing import assert_valid_stream
from tests.cli.conftest import serve
from tests.support.core_scenarios import allow_on_bridge, host_echo_on_bridge
from tests.support.llm_openai import DEFAULT_TEXT, TOOL_SAID, ScriptedOpenAI

pytestmark = pytest.mark.anyio

WRITE = 'CALL_TOOL write_file {"path": "a.txt", "content": "hi"}'


async def test_a_master_on_the_stdio_bridge_gets_text_allows_a_write_and_answers_a_host_tool(
    llm: ScriptedOpenAI, tmp_path: Path, anyio_backend: str
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    options = {
        "base_url": llm.base_url,
        "api_key": "scripted",
        "model": llm.model,
        "max_retries": 0,
    }
    args = (
        *("--backend", anyio_backend, "--adapter", "sdk"),
        *("--setting", "core=openai-agents"),
        *("--setting", f"core_options={json.dumps(options)}"),
    )
    async with serve(*args, env=None, cwd=workspace, stderr=tmp_path / "err") as bridge:
        capabilities = await bridge.next_frame()
        assert capabilities["payload"]["agent"]["name"] == "openai-agents"
        await bridge.send("control.prompt.request", {"prompt_id": "p1", "text": "hello"}, seq=1)
        said = await bridge.until("session.turn.end")
        await bridge.send("control.prompt.request", {"prompt_id": "p2", "text": WRITE}, seq=2)
        await allow_on_bridge(bridge, seq=3)
        wrote = await bridge.until("session.turn.end")
        called = await host_echo_on_bridge(bridge, "p3", seq=4)
        await bridge.close_stdin()
        frames = await bridge.rest()
        assert await bridge.exit_code() == 0
    assert [said["payload"]["stop_reason"], wrote["payload"]["stop_reason"]] == ["end_turn"] * 2
    assert called["payload"]["stop_reason"] == "end_turn"
    assert (workspace / "a.txt").read_text(encoding="utf-8") == "hi"
    texts = [f["payload"]["text"] for f in frames if f["type"] == "agent.text.done"]
    assert texts[0] == DEFAULT_TEXT
    assert any(f"{TOOL_SAID}Wrote 2 characters" in t for t in texts)
    assert any(f"{TOOL_SAID}hi back" in t for t in texts)
    assert_valid_stream(frames)
