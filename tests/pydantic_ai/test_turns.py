"""Turns of the pydantic-ai core over HTTP to the scripted model: text, usage per turn,
a model error mid-stream, a refused request and an abort (thinking, the model switch and
the scenarios every core shares are in ``tests/sdk_cores/``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rawp_adapters.frames import (
    AgentErrorFrame,
    SessionCapabilitiesFrame,
    SessionUsageFrame,
)
from tests.pydantic_ai.sessions import pydantic_ai_session
from tests.support.core_scenarios import NO_GRACE
from tests.support.llm_openai import (
    DEFAULT_TEXT,
    PROMPT_TOKENS,
    Part,
    Reply,
    ScriptedOpenAI,
    last_user_text,
)

pytestmark = pytest.mark.anyio

BROKEN = "BREAK_MID_STREAM"
SAID_BEFORE_THE_BREAK = "Half of an ans"


async def test_a_text_turn_streams_the_models_answer_and_its_usage(
    llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    async with pydantic_ai_session(llm, tmp_path) as d:
        turn = await d.prompt("Say hello.")
    assert turn.text == DEFAULT_TEXT
    assert [f.payload.text for f in turn.of_type("agent.text.done")] == [DEFAULT_TEXT]
    (usage,) = turn.of_type(SessionUsageFrame)
    assert usage.payload.input_tokens == PROMPT_TOKENS
    assert usage.payload.output_tokens == 5  # the scripted deltas
    assert turn.end.payload.usage is not None
    assert turn.end.payload.usage.input_tokens == PROMPT_TOKENS
    assert turn.stop_reason == "end_turn"
    capabilities = d.of_type(SessionCapabilitiesFrame)[0].payload
    assert capabilities.agent is not None
    assert capabilities.agent.name == "pydantic-ai"
    assert capabilities.agent.version == "pydantic-ai-slim 2.68.0"
    assert capabilities.agent.model == "fake-model"


def _break_mid_stream(body: dict[str, object]) -> Reply | None:
    if BROKEN not in last_user_text(body):
        return None
    return Reply(parts=(Part("text", (SAID_BEFORE_THE_BREAK[:5], SAID_BEFORE_THE_BREAK[5:])),),
                 cut=True)  # fmt: skip


async def test_a_model_error_mid_stream_ends_the_turn_with_error_and_the_session_goes_on(
    tmp_path: Path,
) -> None:
    with ScriptedOpenAI(responder=_break_mid_stream) as llm:
        async with pydantic_ai_session(llm, tmp_path) as d:
            broken = await d.prompt(BROKEN)
            after = await d.prompt("Say hello.")
    assert broken.stop_reason == "error"
    assert broken.text == SAID_BEFORE_THE_BREAK
    (error,) = broken.of_type(AgentErrorFrame)
    assert error.payload.severity == "error"
    assert "Connection error" in error.payload.message
    assert after.stop_reason == "end_turn"
    assert after.text == DEFAULT_TEXT


async def test_a_refused_request_ends_the_turn_with_the_apis_error(
    llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    async with pydantic_ai_session(llm, tmp_path) as d:
        failed = await d.prompt("HTTP_400")
        after = await d.prompt("Say hello.")
    (error,) = failed.of_type(AgentErrorFrame)
    assert "400" in error.payload.message
    assert failed.stop_reason == "error"
    assert after.stop_reason == "end_turn"


async def test_aborting_a_streaming_turn_ends_it_cancelled_and_the_next_turn_runs(
    llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    async with pydantic_ai_session(llm, tmp_path, session_options=NO_GRACE) as d:
        start = await d.start_prompt("SLOW_STREAM")
        await d.wait_for("agent.text.delta")
        await d.send(d.control.abort(start.payload.turn_id))
        turn = await d.wait_turn(start.payload.turn_id)  # ended by the core, not the grace
        after = await d.prompt("Say hello.")
    assert turn.stop_reason == "cancelled"
    assert after.text == DEFAULT_TEXT
