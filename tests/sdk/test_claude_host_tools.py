"""The Master's tools in the real Claude Agent SDK, offline: the scripted model calls
``mcp__rawp__<name>``, the Claude core's in-process MCP server passes the call to the
Master, and the model reads the Master's answer as the tool's result."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rawp_adapters.frames import (
    InteractionRequestFrame,
    SessionCapabilitiesFrame,
    SessionClosedFrame,
    SessionErrorFrame,
    TextDeltaFrame,
    ToolCatalogUpdatedFrame,
    ToolInvokeRequestFrame,
    ToolInvokeResultFrame,
    ToolInvokeStreamFrame,
)
from rawp_adapters.testing import SessionDriver, never_answer
from tests.sdk.claude_sessions import claude_session
from tests.support.claude import needs_claude_sdk
from tests.support.llm_anthropic import DEFAULT_TEXT, TOOL_SAID, ScriptedAnthropic, tool_results

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.claude,
    needs_claude_sdk,
]

LOOKUP = {
    "name": "lookup",
    "description": "Look a word up in the Master's dictionary.",
    "input_schema": {
        "type": "object",
        "properties": {"word": {"type": "string"}},
        "required": ["word"],
    },
}
CALL_LOOKUP = 'CALL_TOOL mcp__rawp__lookup {"word": "pelican"}'


async def publish_lookup(d: SessionDriver) -> None:
    await d.send(d.control.publish_tools([LOOKUP]))
    updated = await d.wait_for(ToolCatalogUpdatedFrame)
    assert updated.payload.tools == ["lookup"]


def told_model(api: ScriptedAnthropic) -> dict[str, Any]:
    """The one tool result the model was last given."""
    (result,) = tool_results(api.requests[-1])
    return result


def told_model_error(api: ScriptedAnthropic) -> str:
    """The content (as JSON) of the error result the model was last given."""
    told = told_model(api)
    assert told["is_error"] is True
    return json.dumps(told["content"])


async def test_a_host_tool_call_is_asked_of_the_master_streamed_and_answered(
    api: ScriptedAnthropic, tmp_path: Path
) -> None:
    async with claude_session(api, tmp_path) as run:
        d = run.driver
        await publish_lookup(d)
        start = await d.start_prompt(CALL_LOOKUP)
        request = await d.wait_for(ToolInvokeRequestFrame)
        call_id = request.payload.invocation_id
        await d.send(d.control.tool_stream(call_id, "looking… "))
        await d.wait_for(ToolInvokeStreamFrame)
        await d.send(d.control.tool_result(call_id, "a large water bird"))
        turn = await d.wait_turn(start.payload.turn_id)
    features = d.of_type(SessionCapabilitiesFrame)[0].payload.features
    assert features.host_tools
    assert request.payload.executor == "master"
    assert request.payload.tool_name == "lookup"
    assert request.payload.input == {"word": "pelican"}
    assert call_id.startswith("toolu_")  # the model's own id for the call
    (asked,) = turn.of_type(InteractionRequestFrame)  # the CLI's permission gate held it
    assert asked.payload.context.tool_name == "lookup"
    assert asked.payload.context.tool_call_id == call_id
    assert d.frames.index(asked) < d.frames.index(request)
    assert len(turn.of_type(ToolInvokeRequestFrame)) == 1  # the agent's own report dropped
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert (result.payload.resolution, result.payload.is_error) == ("answered", False)
    told = told_model(api)
    assert told["tool_use_id"] == call_id
    assert "a large water bird" in json.dumps(told["content"])
    assert not told.get("is_error")
    assert f"{TOOL_SAID}a large water bird" in turn.text
    offered = [tool["name"] for tool in api.requests[0]["tools"]]
    assert "mcp__rawp__lookup" in offered  # loaded up front, not behind a tool search
    assert turn.stop_reason == "end_turn"


async def test_a_host_tool_call_the_master_never_answers_ends_at_its_deadline(
    api: ScriptedAnthropic, tmp_path: Path
) -> None:
    async with claude_session(api, tmp_path, host_tool_timeout_ms=500) as run:
        d = run.driver
        await publish_lookup(d)
        turn = await d.prompt(CALL_LOOKUP)
    (request,) = turn.of_type(ToolInvokeRequestFrame)
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert request.payload.timeout_ms == 500
    assert (result.payload.resolution, result.payload.is_error) == ("deadline", True)
    assert "did not answer within 500 ms" in told_model_error(api)
    assert turn.stop_reason == "end_turn"


async def test_aborting_during_a_host_tool_call_cancels_it_and_the_session_goes_on(
    api: ScriptedAnthropic, tmp_path: Path
) -> None:
    async with claude_session(api, tmp_path) as run:
        d = run.driver
        await publish_lookup(d)
        start = await d.start_prompt(CALL_LOOKUP)
        request = await d.wait_for(ToolInvokeRequestFrame)
        await d.send(d.control.abort(start.payload.turn_id))
        turn = await d.wait_turn(start.payload.turn_id)
        call_id = request.payload.invocation_id
        await d.send(d.control.tool_result(call_id, "too late"))
        again = await d.prompt("hello again")
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert (result.payload.resolution, result.payload.is_error) == ("cancelled", True)
    assert turn.stop_reason == "cancelled"
    late = d.of_type("session.error")
    assert [e.payload.error_code for e in late] == ["UNKNOWN_INVOCATION"]
    assert again.text == DEFAULT_TEXT


async def test_a_host_tool_call_with_invalid_input_is_refused_before_the_master_is_asked(
    api: ScriptedAnthropic, tmp_path: Path
) -> None:
    async with claude_session(api, tmp_path, policy=never_answer) as run:
        d = run.driver
        await publish_lookup(d)
        turn = await d.prompt('CALL_TOOL mcp__rawp__lookup {"word": 5}')
    (request,) = turn.of_type(ToolInvokeRequestFrame)
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert request.payload.executor is None  # no Master answers it
    assert (result.payload.resolution, result.payload.is_error) == ("invalid_input", True)
    assert turn.of_type(InteractionRequestFrame) == []  # nobody asked for permission
    assert "invalid input" in told_model_error(api)
    assert turn.stop_reason == "end_turn"


async def test_a_tool_published_after_the_first_turn_is_seen_by_the_agent(
    api: ScriptedAnthropic, tmp_path: Path
) -> None:
    async with claude_session(api, tmp_path) as run:
        d = run.driver
        first = await d.prompt("hello")
        await publish_lookup(d)
        call = d.control.tool_result
        start = await d.start_prompt(CALL_LOOKUP)
        request = await d.wait_for(ToolInvokeRequestFrame)
        await d.send(call(request.payload.invocation_id, "a bird"))
        turn = await d.wait_turn(start.payload.turn_id)
    assert first.text == DEFAULT_TEXT
    assert "mcp__rawp__lookup" in [tool["name"] for tool in api.requests[-1]["tools"]]
    assert f"{TOOL_SAID}a bird" in turn.text


async def test_as_a_sub_agent_a_permission_answered_by_the_master_and_an_end_mid_turn(
    api: ScriptedAnthropic, tmp_path: Path
) -> None:
    """What the delegation tool needs of a Claude-core session: a tool call held for the
    Master's permission runs once allowed, and ending the session in the middle of a
    turn ends the turn and leaves no process behind (checked by ``claude_session``)."""
    async with claude_session(api, tmp_path, policy=never_answer) as run:
        d = run.driver
        start = await d.start_prompt("RUN_BASH echo hi > out.txt")
        asked = await d.wait_for(InteractionRequestFrame)
        await d.send(d.control.allow(asked.payload.interaction_id))
        allowed = await d.wait_turn(start.payload.turn_id)
        assert (run.workspace / "out.txt").read_text() == "hi\n"
        second = await d.start_prompt("SLOW_STREAM 400 50")
        await d.wait_for(TextDeltaFrame, after=d.frames.index(second))
        await d.send(d.control.end("parent cancelled"))
        ended = await d.wait_turn(second.payload.turn_id)
        closed = await d.wait_for(SessionClosedFrame)
    assert allowed.stop_reason == "end_turn"
    assert ended.stop_reason == "cancelled"
    assert closed.payload.reason == "explicit"


async def test_a_steer_during_a_host_tool_call_reaches_the_model_in_the_same_turn(
    api: ScriptedAnthropic, tmp_path: Path
) -> None:
    async with claude_session(api, tmp_path) as run:
        d = run.driver
        await publish_lookup(d)
        start = await d.start_prompt(CALL_LOOKUP)
        request = await d.wait_for(ToolInvokeRequestFrame)
        await d.send(d.control.steer("STEERED: mention the beak too"))
        # The CLI takes the message while the tool runs; the Master's answer releases it.
        await d.send(d.control.tool_result(request.payload.invocation_id, "a water bird"))
        turn = await d.wait_turn(start.payload.turn_id)
        again = await d.prompt("hello again")
        follow_up = d.control.follow_up("later")
        second = await d.start_prompt(CALL_LOOKUP)
        await d.wait_for(ToolInvokeRequestFrame, after=d.frames.index(second))
        await d.send(follow_up)
        refused = await d.wait_for(SessionErrorFrame)
        await d.send(d.control.abort(second.payload.turn_id))
        await d.wait_turn(second.payload.turn_id)
    features = d.of_type(SessionCapabilitiesFrame)[0].payload.features
    assert (features.steering, features.follow_up) == (True, False)
    after_tool = next(r for r in api.requests if tool_results(r))  # the same turn goes on
    assert "STEERED: mention the beak too" in json.dumps(after_tool["messages"])
    assert turn.stop_reason == "end_turn"
    assert again.text == DEFAULT_TEXT  # nothing of the steered turn spilled over
    assert refused.payload.error_code == "UNSUPPORTED"
