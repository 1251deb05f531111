"""The core's ``write`` tool, which the Copilot CLI asks about through the SDK's blocking
permission callback: each question is a PERMISSION question of the Master; allowed the
tool runs, denied or unanswered in time it does not, and the model is told."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rawp_core_copilot._turn import EDITED_INPUT

from rawp_adapters.frames import (
    InteractionRequestFrame,
    InteractionResolvedFrame,
    ToolInvokeResultFrame,
)
from rawp_adapters.testing import deny_all, never_answer
from tests.copilot.sessions import WRITE_PROMPT, WRITE_TOOL, copilot_session
from tests.support.core_scenarios import PARALLEL_WRITES, files, parallel_writes
from tests.support.llm_openai import (
    DEFAULT_TEXT,
    TOOL_SAID,
    ScriptedOpenAI,
)

pytestmark = pytest.mark.anyio


async def test_an_allowed_write_runs_in_the_workspace_and_the_model_sees_its_result(
    llm: ScriptedOpenAI, copilot_cli: Path, tmp_path: Path
) -> None:
    async with copilot_session(llm, copilot_cli, tmp_path) as d:
        turn = await d.prompt(WRITE_PROMPT)
    (asked,) = turn.of_type(InteractionRequestFrame)
    assert asked.payload.interaction_type == "PERMISSION"
    assert asked.payload.context.tool_name == "write"
    assert asked.payload.context.tool_input == WRITE_TOOL
    assert (tmp_path / "notes.txt").read_text(encoding="utf-8") == "hello"
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert result.payload.is_error is False
    assert f"{TOOL_SAID}Wrote 5 characters to notes.txt." in turn.text
    assert turn.stop_reason == "end_turn"


async def test_a_denied_write_does_not_run_and_the_model_is_told(
    llm: ScriptedOpenAI, copilot_cli: Path, tmp_path: Path
) -> None:
    async with copilot_session(llm, copilot_cli, tmp_path, policy=deny_all) as d:
        turn = await d.prompt(WRITE_PROMPT)
        after = await d.prompt("Say hello.")  # the conversation goes on
    assert not (tmp_path / "notes.txt").exists()
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert result.payload.is_error is True
    assert TOOL_SAID in turn.text
    assert turn.stop_reason == "end_turn"
    assert after.stop_reason == "end_turn"


async def test_an_unanswered_write_is_denied_at_its_deadline(
    llm: ScriptedOpenAI, copilot_cli: Path, tmp_path: Path
) -> None:
    async with copilot_session(
        llm, copilot_cli, tmp_path, policy=never_answer, timeout_ms=200
    ) as d:
        turn = await d.prompt(WRITE_PROMPT)
    assert not (tmp_path / "notes.txt").exists()
    (resolved,) = turn.of_type("agent.interaction.resolved")
    assert resolved.payload.outcome == "timed_out"
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert result.payload.is_error is True
    assert turn.stop_reason == "end_turn"


async def test_aborting_a_turn_that_waits_for_permission_ends_it_cancelled_and_writes_nothing(
    llm: ScriptedOpenAI, copilot_cli: Path, tmp_path: Path
) -> None:
    async with copilot_session(llm, copilot_cli, tmp_path, policy=never_answer) as d:
        start = await d.start_prompt(WRITE_PROMPT)
        await d.wait_for(InteractionRequestFrame)
        await d.send(d.control.abort(start.payload.turn_id))
        turn = await d.wait_turn(start.payload.turn_id)
        after = await d.prompt("Say hello.")  # the session goes on
    assert turn.stop_reason == "cancelled"
    assert not (tmp_path / "notes.txt").exists()
    assert after.stop_reason == "end_turn"
    assert after.text == DEFAULT_TEXT


async def test_two_parallel_writes_answered_in_reverse_order_each_get_their_own_answer(
    copilot_cli: Path, tmp_path: Path
) -> None:
    with ScriptedOpenAI(responder=parallel_writes) as llm:
        async with copilot_session(llm, copilot_cli, tmp_path, policy=never_answer) as d:
            start = await d.start_prompt(PARALLEL_WRITES)
            first, second = await d.wait_count(InteractionRequestFrame, 2)
            # both asked at once: the second before the first was resolved (by its deadline)
            asked_second = next(i for i, f in enumerate(d.frames) if f is second)
            assert not any(isinstance(f, InteractionResolvedFrame) for f in d.frames[:asked_second])
            await d.send(d.control.allow(second.payload.interaction_id))
            await d.send(d.control.deny(first.payload.interaction_id))
            turn = await d.wait_turn(start.payload.turn_id)
        assert llm.violations == []
    allowed = (second.payload.context.tool_input or {})["path"]
    assert files(tmp_path) == [allowed]
    outcomes = {
        f.payload.interaction_id: f.payload.outcome for f in turn.of_type(InteractionResolvedFrame)
    }
    assert outcomes == {
        first.payload.interaction_id: "denied",
        second.payload.interaction_id: "allowed",
    }
    results = [f.payload.is_error for f in turn.of_type(ToolInvokeResultFrame)]
    assert sorted(results) == [False, True]
    assert turn.stop_reason == "end_turn"


async def test_a_write_allowed_with_edited_input_does_not_run_and_the_model_is_told(
    llm: ScriptedOpenAI, copilot_cli: Path, tmp_path: Path
) -> None:
    edited = json.dumps({"path": "edited.txt", "content": "the Master's"})
    async with copilot_session(llm, copilot_cli, tmp_path, policy=never_answer) as d:
        start = await d.start_prompt(WRITE_PROMPT)
        asked = await d.wait_for(InteractionRequestFrame)
        await d.send(d.control.respond(asked.payload.interaction_id, "allow", edited))
        turn = await d.wait_turn(start.payload.turn_id)
    assert files(tmp_path) == []
    assert EDITED_INPUT in turn.text
    assert turn.stop_reason == "end_turn"
