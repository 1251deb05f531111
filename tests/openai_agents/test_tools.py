"""Tools of the openai-agents core over HTTP to the scripted model: a gated tool's
interruption is a PERMISSION question (allowed, denied, timed out, aborted while
waiting), parallel calls answered in reverse order, and abort (the Master's tools and
the scenarios every core shares are in ``tests/sdk_cores/``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rawp_adapters.frames import (
    InteractionRequestFrame,
    ToolInvokeRequestFrame,
    ToolInvokeResultFrame,
)
from rawp_adapters.testing import allow_all, deny_all, drive, never_answer
from tests.openai_agents.conftest import core
from tests.support.core_scenarios import NO_GRACE, files
from tests.support.llm_openai import (
    TOOL_SAID,
    Reply,
    ScriptedOpenAI,
    ToolCall,
    last_user_text,
    trailing_tool_results,
)

pytestmark = pytest.mark.anyio

WRITE_NOTES = 'CALL_TOOL write_file {"path": "notes.txt", "content": "hi"}'
TWO_WRITES = "TWO_WRITES"


def two_writes(body: dict[str, Any]) -> Reply | None:
    """``TWO_WRITES``: two ``write_file`` calls in one reply."""
    if TWO_WRITES not in last_user_text(body) or trailing_tool_results(body):
        return None
    calls = tuple(ToolCall("write_file", {"path": f"{n}.txt", "content": n}) for n in ("a", "b"))
    return Reply(tool_calls=calls, finish_reason="tool_calls")


async def test_an_allowed_write_asks_first_then_writes_and_the_model_sees_the_result(
    llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    async with drive(core(llm), workspace=tmp_path, policy=allow_all) as d:
        turn = await d.prompt(WRITE_NOTES)
    assert (tmp_path / "notes.txt").read_text() == "hi"
    (asked,) = turn.of_type(InteractionRequestFrame)
    assert asked.payload.context.tool_name == "write_file"
    assert asked.payload.context.tool_input == {"path": "notes.txt", "content": "hi"}
    (call,) = turn.of_type(ToolInvokeRequestFrame)
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert call.payload.invocation_id == asked.payload.context.tool_call_id
    assert result.payload.invocation_id == call.payload.invocation_id
    assert not result.payload.is_error
    assert f"{TOOL_SAID}Wrote 2 characters" in turn.text
    assert turn.stop_reason == "end_turn"


async def test_a_write_allowed_with_edited_input_runs_with_the_masters_input(
    llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    edited = json.dumps({"path": "edited.txt", "content": "the Master's"})
    async with drive(core(llm), workspace=tmp_path, policy=never_answer) as d:
        start = await d.start_prompt(WRITE_NOTES)
        asked = await d.wait_for(InteractionRequestFrame)
        await d.send(d.control.respond(asked.payload.interaction_id, "allow", edited))
        turn = await d.wait_turn(start.payload.turn_id)
    assert files(tmp_path) == ["edited.txt"]
    assert (tmp_path / "edited.txt").read_text(encoding="utf-8") == "the Master's"
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert not result.payload.is_error
    assert f"{TOOL_SAID}Wrote 12 characters to edited.txt." in turn.text


async def test_a_denied_write_is_rejected_and_the_model_is_told(
    llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    async with drive(core(llm), workspace=tmp_path, policy=deny_all) as d:
        turn = await d.prompt(WRITE_NOTES)
    assert files(tmp_path) == []
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert result.payload.is_error
    assert TOOL_SAID in turn.text
    assert turn.stop_reason == "end_turn"


async def test_an_unanswered_write_times_out_to_a_rejection(
    llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    async with drive(
        core(llm, permission_timeout_ms=100), workspace=tmp_path, policy=never_answer
    ) as d:
        turn = await d.prompt(WRITE_NOTES)
    assert files(tmp_path) == []
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert result.payload.is_error
    assert "timed out" in result.payload.output
    assert turn.stop_reason == "end_turn"


async def test_an_abort_while_a_write_waits_for_permission_cancels_the_turn(
    llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    async with drive(core(llm), workspace=tmp_path, policy=never_answer) as d:
        start = await d.start_prompt(WRITE_NOTES)
        await d.wait_for(InteractionRequestFrame)
        await d.send(d.control.abort(start.payload.turn_id))
        turn = await d.wait_turn(start.payload.turn_id)
        after = await d.prompt("hello")
    assert turn.stop_reason == "cancelled"
    assert files(tmp_path) == []
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert result.payload.is_error
    assert after.stop_reason == "end_turn"


async def test_gating_every_tool_asks_before_a_read_too(
    llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("secret")
    read = 'CALL_TOOL read_file {"path": "notes.txt"}'
    async with drive(core(llm), workspace=tmp_path, policy=allow_all) as d:
        ungated = await d.prompt(read)
    async with drive(core(llm, gate_all_tools=True), workspace=tmp_path, policy=deny_all) as d:
        gated = await d.prompt(read)
    assert ungated.of_type(InteractionRequestFrame) == []
    assert f"{TOOL_SAID}secret" in ungated.text
    (asked,) = gated.of_type(InteractionRequestFrame)
    assert asked.payload.context.tool_name == "read_file"
    assert "secret" not in gated.text


async def test_a_write_outside_the_workspace_fails_as_an_error_result(
    llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    async with drive(core(llm), workspace=tmp_path, policy=allow_all) as d:
        turn = await d.prompt('CALL_TOOL write_file {"path": "../escape.txt", "content": "x"}')
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert result.payload.is_error
    assert "not a path inside the workspace" in result.payload.output
    assert not (tmp_path.parent / "escape.txt").exists()


async def test_two_parallel_writes_answered_in_reverse_order_each_get_their_answer(
    tmp_path: Path,
) -> None:
    with ScriptedOpenAI(responder=two_writes) as llm:
        async with drive(core(llm), workspace=tmp_path, policy=never_answer) as d:
            start = await d.start_prompt(TWO_WRITES)
            first, second = await d.wait_count(InteractionRequestFrame, 2)
            await d.send(d.control.allow(second.payload.interaction_id))
            await d.send(d.control.deny(first.payload.interaction_id))
            turn = await d.wait_turn(start.payload.turn_id)
        assert llm.violations == []
    assert second.payload.context.tool_input is not None
    assert files(tmp_path) == [second.payload.context.tool_input["path"]]
    results = {
        r.payload.invocation_id: r.payload.is_error for r in turn.of_type(ToolInvokeResultFrame)
    }
    assert results == {
        first.payload.context.tool_call_id: True,
        second.payload.context.tool_call_id: False,
    }
    assert turn.stop_reason == "end_turn"


async def test_aborting_a_streaming_turn_ends_it_cancelled_and_the_session_goes_on(
    llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    async with drive(core(llm), workspace=tmp_path, options=NO_GRACE) as d:
        start = await d.start_prompt("SLOW_STREAM 200 50")
        await d.wait_for("agent.text.delta")
        await d.send(d.control.abort(start.payload.turn_id))
        turn = await d.wait_turn(start.payload.turn_id)
        after = await d.prompt("hello")
    assert turn.stop_reason == "cancelled"
    assert after.stop_reason == "end_turn"
