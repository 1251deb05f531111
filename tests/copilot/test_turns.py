"""Turns of the copilot core: the Copilot CLI, logged in to nothing, over HTTP to the
scripted model (its capabilities and the scenarios every core shares are in
``tests/sdk_cores/``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rawp_adapters.frames import AgentErrorFrame
from tests.copilot.sessions import copilot_session
from tests.support.llm_openai import (
    API_ERROR_MESSAGE,
    DEFAULT_TEXT,
    HTTP_400,
    ScriptedOpenAI,
    offered_tools,
)

pytestmark = pytest.mark.anyio


async def test_a_text_turn_streams_the_models_answer_from_the_scripted_server(
    llm: ScriptedOpenAI, copilot_cli: Path, tmp_path: Path
) -> None:
    async with copilot_session(llm, copilot_cli, tmp_path) as d:
        turn = await d.prompt("Say hello.")
    assert turn.text == DEFAULT_TEXT
    assert [f.payload.text for f in turn.of_type("agent.text.done")] == [DEFAULT_TEXT]
    assert turn.stop_reason == "end_turn"
    assert llm.requests  # the answer came over HTTP from the scripted server


async def test_the_model_is_offered_the_cores_tools_and_none_of_the_clis_own(
    llm: ScriptedOpenAI, copilot_cli: Path, tmp_path: Path
) -> None:
    async with copilot_session(llm, copilot_cli, tmp_path) as d:
        await d.prompt("Say hello.")
    assert {name for body in llm.requests for name in offered_tools(body)} == {"write"}


async def test_a_model_error_ends_the_turn_with_an_error_and_the_session_goes_on(
    llm: ScriptedOpenAI, copilot_cli: Path, tmp_path: Path
) -> None:
    async with copilot_session(llm, copilot_cli, tmp_path) as d:
        failed = await d.prompt(f"{HTTP_400} please")
        after = await d.prompt("Say hello.")
    assert failed.stop_reason == "error"
    (error,) = failed.of_type(AgentErrorFrame)
    assert API_ERROR_MESSAGE in error.payload.message
    assert after.stop_reason == "end_turn"
    assert after.text == DEFAULT_TEXT
