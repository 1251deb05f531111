"""What every SDK core tells and does in a turn, against the scripted model over HTTP:
its capabilities, thinking streamed before the text, and a second prompt while one
runs refused ``PROMPT_IN_PROGRESS``."""

from __future__ import annotations

from pathlib import Path

import pytest

from rawp_adapters.frames import SessionCapabilitiesFrame, SessionErrorFrame, TurnStartFrame
from rawp_adapters.testing import drive
from tests.support.core_scenarios import ScriptedCore
from tests.support.llm_openai import DEFAULT_TEXT, THINK_FIRST, THINKING_TEXT, ScriptedOpenAI

pytestmark = pytest.mark.anyio

WAIT_S = 60.0


async def test_the_capabilities_tell_the_core_its_sdks_version_its_model_and_what_it_does(
    scripted_core: ScriptedCore, llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    async with drive(scripted_core.adapter(llm), workspace=tmp_path, timeout=WAIT_S) as d:
        pass
    capabilities = d.of_type(SessionCapabilitiesFrame)[0].payload
    assert capabilities.agent is not None
    agent = capabilities.agent
    assert (agent.name, agent.version, agent.model) == (
        scripted_core.name,
        scripted_core.version(),
        llm.model,
    )
    claimed = {name for name, value in capabilities.features.model_dump().items() if value is True}
    assert claimed == scripted_core.features
    assert capabilities.features.adapter_type == "sdk"


async def test_thinking_streams_as_its_own_block_before_the_text(
    scripted_core: ScriptedCore, llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    async with drive(scripted_core.adapter(llm), workspace=tmp_path, timeout=WAIT_S) as d:
        turn = await d.prompt(f"{THINK_FIRST} Say hello.")
    (thought,) = turn.of_type("agent.thinking.done")
    assert (thought.payload.index, thought.payload.text) == (0, THINKING_TEXT)
    assert "".join(f.payload.text for f in turn.of_type("agent.thinking.delta")) == THINKING_TEXT
    (text,) = turn.of_type("agent.text.done")
    assert (text.payload.index, text.payload.text) == (1, DEFAULT_TEXT)
    assert turn.stop_reason == "end_turn"


async def test_a_second_prompt_while_one_runs_is_refused_prompt_in_progress(
    scripted_core: ScriptedCore, llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    async with drive(scripted_core.adapter(llm), workspace=tmp_path, timeout=WAIT_S) as d:
        start = await d.start_prompt("SLOW_STREAM 20 20")
        await d.send(d.control.prompt("Say hello."))
        refused = await d.wait_for(SessionErrorFrame)
        turn = await d.wait_turn(start.payload.turn_id)
        after = await d.prompt("Say hello.")
    assert refused.payload.error_code == "PROMPT_IN_PROGRESS"
    assert turn.stop_reason == "end_turn"
    assert "".join(f"tick {i} " for i in range(20)) == turn.text
    assert len(d.of_type(TurnStartFrame)) == 2
    assert after.text == DEFAULT_TEXT
