"""Text, usage and model errors of the openai-agents core, over HTTP to the scripted
model (thinking is in ``tests/sdk_cores/test_turns.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rawp_adapters.frames import (
    AgentErrorFrame,
    TextDoneFrame,
)
from rawp_adapters.testing import drive
from tests.openai_agents.conftest import core
from tests.support.llm_openai import DEFAULT_TEXT, HTTP_400, ScriptedOpenAI

pytestmark = pytest.mark.anyio


async def test_a_text_turn_streams_the_models_words_and_its_usage(
    llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    async with drive(core(llm), workspace=tmp_path) as d:
        turn = await d.prompt("hello")
    assert turn.stop_reason == "end_turn"
    assert turn.text == DEFAULT_TEXT
    (done,) = turn.of_type(TextDoneFrame)
    assert done.payload.text == DEFAULT_TEXT
    assert len(turn.of_type("agent.text.delta")) > 1
    usage = turn.end.payload.usage
    assert usage is not None
    assert usage.input_tokens == 100


async def test_a_model_error_ends_the_turn_in_error_and_the_session_goes_on(
    llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    async with drive(core(llm), workspace=tmp_path) as d:
        failed = await d.prompt(HTTP_400)
        after = await d.prompt("hello")
    assert failed.stop_reason == "error"
    (error,) = failed.of_type(AgentErrorFrame)
    assert "Scripted error" in error.payload.message
    assert after.stop_reason == "end_turn"
    assert after.text == DEFAULT_TEXT


async def test_the_conversation_carries_over_to_the_next_prompt(
    llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    async with drive(core(llm), workspace=tmp_path) as d:
        await d.prompt("first")
        await d.prompt("second")
    messages = llm.requests[-1]["messages"]
    said = [m.get("content") for m in messages if m.get("role") in ("user", "assistant")]
    assert "first" in str(said[0])
    assert DEFAULT_TEXT in str(said[1])
    assert "second" in str(said[2])
