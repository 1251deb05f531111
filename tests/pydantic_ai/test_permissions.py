"""The core's gated ``write`` over HTTP to the scripted model: each deferred approval of
pydantic-ai is a PERMISSION question; allowed it runs, anything else is ``ToolDenied``
with the reason the model is then told (it quotes its tool results)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rawp_adapters.frames import InteractionRequestFrame, ToolInvokeResultFrame
from rawp_adapters.testing import deny_all, never_answer
from tests.pydantic_ai.sessions import WRITE_PROMPT, WRITE_TOOL, pydantic_ai_session
from tests.support.core_scenarios import PARALLEL_WRITES, files, parallel_writes
from tests.support.llm_openai import (
    TOOL_SAID,
    ScriptedOpenAI,
)

pytestmark = pytest.mark.anyio


async def test_an_allowed_write_runs_in_the_workspace_and_the_model_sees_its_result(
    llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    async with pydantic_ai_session(llm, tmp_path) as d:
        turn = await d.prompt(WRITE_PROMPT)
    (asked,) = turn.of_type(InteractionRequestFrame)
    assert asked.payload.interaction_type == "PERMISSION"
    assert asked.payload.context.tool_name == "write"
    assert asked.payload.context.tool_input == WRITE_TOOL
    assert (tmp_path / "notes.txt").read_text(encoding="utf-8") == "hello"
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert result.payload.is_error is False
    assert result.payload.invocation_id == asked.payload.context.tool_call_id
    assert f"{TOOL_SAID}Wrote 5 characters to notes.txt." in turn.text
    assert turn.stop_reason == "end_turn"


async def test_a_denied_write_does_not_run_and_the_model_is_told_why(
    llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    async with pydantic_ai_session(llm, tmp_path, policy=deny_all) as d:
        turn = await d.prompt(WRITE_PROMPT)
        after = await d.prompt("Say hello.")  # the conversation goes on
    assert not (tmp_path / "notes.txt").exists()
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert result.payload.is_error is True
    assert "refused permission to run write" in str(result.payload.output)
    assert f"{TOOL_SAID}The user refused permission to run write" in turn.text
    assert turn.stop_reason == "end_turn"
    assert after.stop_reason == "end_turn"


async def test_an_unanswered_write_is_denied_at_its_deadline(
    llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    async with pydantic_ai_session(llm, tmp_path, policy=never_answer, timeout_ms=200) as d:
        turn = await d.prompt(WRITE_PROMPT)
    assert not (tmp_path / "notes.txt").exists()
    (resolved,) = turn.of_type("agent.interaction.resolved")
    assert resolved.payload.outcome == "timed_out"
    assert "timed out" in turn.text
    assert turn.stop_reason == "end_turn"


async def test_aborting_a_turn_that_waits_for_permission_ends_it_cancelled_and_writes_nothing(
    llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    async with pydantic_ai_session(llm, tmp_path, policy=never_answer) as d:
        start = await d.start_prompt(WRITE_PROMPT)
        await d.wait_for(InteractionRequestFrame)
        await d.send(d.control.abort(start.payload.turn_id))
        turn = await d.wait_turn(start.payload.turn_id)
        after = await d.prompt("Say hello.")  # the dangling call was closed in history
    assert turn.stop_reason == "cancelled"
    assert not (tmp_path / "notes.txt").exists()
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert result.payload.is_error is True
    assert after.stop_reason == "end_turn"


async def test_a_write_outside_the_workspace_fails_even_when_allowed(
    llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    async with pydantic_ai_session(llm, workspace) as d:
        turn = await d.prompt("WRITE_FILE ../outside.txt escaped")
    assert not (tmp_path / "outside.txt").exists()
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert result.payload.is_error is True
    assert "not a path inside the workspace" in str(result.payload.output)


async def test_two_parallel_writes_answered_in_reverse_order_each_get_their_own_answer(
    tmp_path: Path,
) -> None:
    with ScriptedOpenAI(responder=parallel_writes) as llm:
        async with pydantic_ai_session(llm, tmp_path, policy=never_answer) as d:
            start = await d.start_prompt(PARALLEL_WRITES)
            await d.wait_count(InteractionRequestFrame, 2)
            by_path = {
                (f.payload.context.tool_input or {})["path"]: f.payload.interaction_id
                for f in d.of_type(InteractionRequestFrame)
            }
            await d.send(d.control.allow(by_path["second.txt"]))
            await d.send(d.control.deny(by_path["first.txt"]))
            turn = await d.wait_turn(start.payload.turn_id)
        assert llm.violations == []
    assert files(tmp_path) == ["second.txt"]
    results = {
        f.payload.invocation_id: f.payload.is_error for f in turn.of_type(ToolInvokeResultFrame)
    }
    assert sorted(results.values()) == [False, True]
    assert f"{TOOL_SAID}Wrote 1 characters to second.txt." in turn.text
    assert f"{TOOL_SAID}The user refused permission to run write" in turn.text
    assert turn.stop_reason == "end_turn"


async def test_a_write_allowed_with_edited_input_runs_with_the_masters_input(
    llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    edited = json.dumps({"path": "edited.txt", "content": "the Master's"})
    async with pydantic_ai_session(llm, tmp_path, policy=never_answer) as d:
        start = await d.start_prompt(WRITE_PROMPT)
        asked = await d.wait_for(InteractionRequestFrame)
        await d.send(d.control.respond(asked.payload.interaction_id, "allow", edited))
        turn = await d.wait_turn(start.payload.turn_id)
    assert files(tmp_path) == ["edited.txt"]
    assert (tmp_path / "edited.txt").read_text(encoding="utf-8") == "the Master's"
    assert "Wrote 12 characters to edited.txt." in turn.text
