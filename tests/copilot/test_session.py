"""What the copilot core takes between and into turns: a compaction (the CLI's own
summary), and a steer or follow-up into a running turn (``send`` in ``immediate`` or
``enqueue`` mode). Its model change is in ``tests/sdk_cores/test_models.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rawp_adapters.frames import (
    InteractionRequest,
    SessionCompactedFrame,
)
from rawp_adapters.testing import SessionDriver
from tests.copilot.sessions import WRITE_PROMPT, copilot_session
from tests.support.llm_openai import (
    DEFAULT_TEXT,
    TOOL_SAID,
    ScriptedOpenAI,
    last_user_text,
    trailing_tool_results,
)

pytestmark = pytest.mark.anyio

STEERED = "Also say hello."


async def test_a_compaction_replaces_the_conversation_by_the_models_summary(
    llm: ScriptedOpenAI, copilot_cli: Path, tmp_path: Path
) -> None:
    async with copilot_session(llm, copilot_cli, tmp_path) as d:
        await d.prompt("Say hello.")
        await d.send(d.control.compact("keep the greeting"))
        compacted = await d.wait_for(SessionCompactedFrame)
        after = await d.prompt("Say it again.")
    assert (compacted.payload.trigger, compacted.payload.compacted) == ("manual", True)
    assert compacted.payload.summary == DEFAULT_TEXT, "the scripted model's answer"
    [summarised] = [b for b in llm.requests if "keep the greeting" in last_user_text(b)]
    assert "Say hello." in str(summarised["messages"]), "the model summarised the prompt"
    history = [m for m in llm.requests[-1]["messages"] if m["role"] != "system"]
    assert f"<summary>\n{DEFAULT_TEXT}\n</summary>" in str(history[0]["content"])
    assert after.stop_reason == "end_turn"


async def steered_while_asked(
    d: SessionDriver[Any], steer: Any
) -> tuple[Any, list[InteractionRequest]]:
    """A write whose question is answered only once ``steer`` was sent in its turn."""
    start = await d.start_prompt(WRITE_PROMPT)
    question = await d.wait_for("agent.interaction.request")
    await d.send(steer)
    await d.send(d.control.allow(question.payload.interaction_id))
    return await d.wait_turn(start.payload.turn_id), [question.payload]


async def test_a_steer_reaches_the_model_with_the_tools_result_in_the_same_turn(
    llm: ScriptedOpenAI, copilot_cli: Path, tmp_path: Path
) -> None:
    async with copilot_session(llm, copilot_cli, tmp_path, policy=lambda _: None) as d:
        turn, _ = await steered_while_asked(d, d.control.steer(STEERED))
    assert turn.stop_reason == "end_turn"
    assert len(turn.of_type("session.turn.end")) == 1
    steered = llm.requests[1]
    assert trailing_tool_results(steered) == [], "the steer came after the tool's result"
    assert STEERED in last_user_text(steered)
    assert turn.text.endswith(DEFAULT_TEXT)
    assert len(llm.requests) == 2


async def test_a_follow_up_reaches_the_model_once_it_is_done_in_the_same_turn(
    llm: ScriptedOpenAI, copilot_cli: Path, tmp_path: Path
) -> None:
    async with copilot_session(llm, copilot_cli, tmp_path, policy=lambda _: None) as d:
        turn, _ = await steered_while_asked(d, d.control.follow_up(STEERED))
    assert turn.stop_reason == "end_turn"
    done_with_the_tool, followed = llm.requests[1], llm.requests[2]
    assert trailing_tool_results(done_with_the_tool) != []
    assert STEERED in last_user_text(followed)
    assert f"{TOOL_SAID}" in turn.text
    assert turn.text.endswith(DEFAULT_TEXT)
    assert len(llm.requests) == 3
