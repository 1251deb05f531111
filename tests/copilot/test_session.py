"""What the copilot core takes between and into turns: a compaction (the CLI's own
summary), and a steer or follow-up into a running turn (``send`` in ``immediate`` or
``enqueue`` mode). Its model change is in ``tests/sdk_cores/test_models.py``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rawp_adapters.frames import (
    InteractionRequestFrame,
    SessionCompactedFrame,
)
from rawp_adapters.testing import TurnRecord, never_answer
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


async def steered(
    llm: ScriptedOpenAI, cli: Path, workspace: Path, message: Callable[[Any], Any]
) -> TurnRecord:
    """A write's turn, its question answered only once ``message(control)`` was sent into
    it; the turn ends once, with the model's answer to that message."""
    async with copilot_session(llm, cli, workspace, policy=never_answer) as d:
        start = await d.start_prompt(WRITE_PROMPT)
        question = await d.wait_for(InteractionRequestFrame)
        await d.send(message(d.control))
        await d.send(d.control.allow(question.payload.interaction_id))
        turn = await d.wait_turn(start.payload.turn_id)
    assert turn.stop_reason == "end_turn"
    assert turn.text.endswith(DEFAULT_TEXT)
    return turn


async def test_a_steer_reaches_the_model_with_the_tools_result_in_the_same_turn(
    llm: ScriptedOpenAI, copilot_cli: Path, tmp_path: Path
) -> None:
    await steered(llm, copilot_cli, tmp_path, lambda control: control.steer(STEERED))
    [_, with_the_result] = llm.requests
    assert [m["role"] for m in with_the_result["messages"]][-2:] == ["tool", "user"]
    assert STEERED in last_user_text(with_the_result)


async def test_a_follow_up_reaches_the_model_once_it_is_done_in_the_same_turn(
    llm: ScriptedOpenAI, copilot_cli: Path, tmp_path: Path
) -> None:
    turn = await steered(llm, copilot_cli, tmp_path, lambda control: control.follow_up(STEERED))
    [_, the_result, followed] = llm.requests
    assert trailing_tool_results(the_result) != []
    assert STEERED in last_user_text(followed)
    assert TOOL_SAID in turn.text, "the model answered the result before the follow-up"
