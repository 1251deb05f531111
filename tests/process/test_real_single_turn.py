"""Single-turn mode (§18) against the real pi: one ``pi --mode json`` process per prompt.

Exit 0 ends the turn, not the session; the next prompt resumes the agent's own session
with ``--session <id>``, so the model sees the whole conversation.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rawp_adapter_process import ProcessAdapter, ProcessSettings

from rawp_adapters.frames import SessionCapabilitiesFrame, ToolInvokeResultFrame
from rawp_adapters.testing import drive
from tests.support.llm_openai import DEFAULT_TEXT, ScriptedOpenAI, last_user_text
from tests.support.peers import make_peer, peer_available

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.peers,
    pytest.mark.skipif(not peer_available("pi"), reason="pi is not installed: run install-peers"),
]


def one_shot_pi(llm: ScriptedOpenAI, home: Path) -> tuple[ProcessAdapter, Path]:
    peer = make_peer("pi", llm_base_url=llm.base_url, home=home)
    mode = peer.argv.index("--mode")
    command = [
        *peer.argv[:mode],
        "--mode",
        "json",
        *(arg for arg in peer.argv[mode + 2 :] if arg != "--no-session"),
    ]
    settings = {"env": peer.env, "agent_name": "pi", "single_turn": {"command": command}}
    adapter = ProcessAdapter(ProcessSettings.model_validate(settings), single_turn_process=True)
    return adapter, peer.cwd


async def test_each_prompt_runs_one_process_and_the_next_resumes_the_conversation(
    tmp_path: Path,
) -> None:
    with ScriptedOpenAI() as llm:
        adapter, workspace = one_shot_pi(llm, tmp_path)
        async with drive(adapter, workspace=workspace, timeout=60) as d:
            first = await d.prompt("Remember the word PELICAN.")
            second = await d.prompt("RUN_BASH echo one-shot")
            closed = await d.end()
        requests = llm.requests

    caps = d.of_type(SessionCapabilitiesFrame)[0].payload.features
    assert caps.single_turn_process
    assert (first.stop_reason, first.text) == ("end_turn", DEFAULT_TEXT)
    assert second.stop_reason == "end_turn"
    (result,) = second.of_type(ToolInvokeResultFrame)
    assert "one-shot" in result.payload.output
    assert closed.payload.reason == "explicit"
    assert last_user_text(requests[0]) == "Remember the word PELICAN."
    later = requests[1]["messages"]
    assert any("PELICAN" in str(m.get("content")) for m in later), "the session was resumed"
