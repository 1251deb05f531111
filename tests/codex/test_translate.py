"""The sans-IO translation of app-server messages, on messages shaped as codex 0.169.0
sends them (the real-agent tests cover the common ones; these cover what the scripted
model cannot make codex send, such as plans, and the edges)."""

from __future__ import annotations

from typing import Any

import pytest
from rawp_adapter_codex._translate import (
    COMMAND_APPROVAL,
    FILE_CHANGE_APPROVAL,
    MCP_ELICITATION,
    Translator,
    answer,
    decision,
    stop_reason,
    turn_usage,
)
from rawp_adapter_codex._wire import TokenUsageBreakdown

from rawp_adapters import InteractionOutcome, Question
from rawp_adapters.frames import (
    PlanUpdated,
    SessionCompacted,
    TextDelta,
    TextDone,
    ThinkingDelta,
    ThinkingDone,
    ToolInvokeRequest,
    ToolInvokeResult,
    ToolInvokeStream,
)

TURN = "codex-turn-1"


def item(kind: str, **fields: Any) -> dict[str, Any]:
    return {"threadId": "t", "turnId": TURN, "item": {"type": kind, **fields}}


def delta(item_id: str, text: str) -> dict[str, Any]:
    return {"threadId": "t", "turnId": TURN, "itemId": item_id, "delta": text}


COMMAND = {"id": "call_1", "command": "touch x", "cwd": "/w", "commandActions": []}


def test_a_plan_update_becomes_agent_plan_updated_with_every_step_and_its_status() -> None:
    params = {
        "threadId": "t",
        "turnId": TURN,
        "explanation": None,
        "plan": [
            {"step": "Read the code", "status": "completed"},
            {"step": "Write the fix", "status": "inProgress"},
            {"step": "Test it", "status": "pending"},
        ],
    }
    (plan,) = Translator("turn").notification("turn/plan/updated", params)
    assert isinstance(plan, PlanUpdated)
    assert [(e.content, e.status) for e in plan.entries] == [
        ("Read the code", "completed"),
        ("Write the fix", "in_progress"),
        ("Test it", "pending"),
    ]
    assert plan.turn_id == "turn"


def test_text_and_thinking_blocks_end_with_their_items_and_unstreamed_text_is_sent_whole() -> None:
    t = Translator("turn")
    out = t.notification(
        "item/reasoning/summaryTextDelta", {**delta("rs", "Hmm"), "summaryIndex": 0}
    )
    out += t.notification("item/agentMessage/delta", delta("msg", "Hel"))
    out += t.notification("item/agentMessage/delta", delta("msg", "lo"))
    out += t.notification("item/completed", item("reasoning", id="rs", summary=["Hmm"]))
    out += t.notification("item/completed", item("agentMessage", id="msg", text="Hello"))
    out += t.notification("item/completed", item("agentMessage", id="msg2", text="Whole"))
    assert [type(p) for p in out] == [
        ThinkingDelta,
        ThinkingDone,
        TextDelta,
        TextDelta,
        TextDone,
        TextDelta,
        TextDone,
    ]
    assert [getattr(p, "index", None) for p in out] == [0, 0, 1, 1, 1, 2, 2]
    assert [p.text for p in out if isinstance(p, TextDone)] == ["Hello", "Whole"]
    assert t.finish() == []


def test_a_command_is_announced_streamed_and_its_failure_reported() -> None:
    t = Translator("turn")
    started = t.notification(
        "item/started", item("commandExecution", status="inProgress", **COMMAND)
    )
    streamed = t.notification("item/commandExecution/outputDelta", delta("call_1", "oops\n"))
    done = t.notification(
        "item/completed",
        item("commandExecution", status="completed", exitCode=2, aggregatedOutput=None, **COMMAND),
    )
    (request,) = started
    assert isinstance(request, ToolInvokeRequest)
    assert (request.tool_name, request.input) == (
        "commandExecution",
        {"command": "touch x", "cwd": "/w"},
    )
    (stream,) = streamed
    assert isinstance(stream, ToolInvokeStream)
    (result,) = done
    assert isinstance(result, ToolInvokeResult)
    assert (result.output, result.is_error) == ("oops\n", True)


def asks(
    t: Translator, method: str, params: dict[str, Any], timeout_ms: int | None = None
) -> tuple[list[Any], Question]:
    asked = t.approval(method, params, timeout_ms=timeout_ms)
    assert asked is not None
    return asked


def test_an_approval_for_an_item_not_announced_announces_it_and_asks_under_its_name() -> None:
    t = Translator("turn")
    params = {"threadId": "t", "turnId": TURN, "itemId": "patch_1", "startedAtMs": 0}
    frames, question = asks(t, FILE_CHANGE_APPROVAL, {**params, "reason": "write"}, timeout_ms=5)
    (request,) = frames
    assert isinstance(request, ToolInvokeRequest)
    assert request.tool_name == "fileChange"
    assert question.context is not None
    assert (question.context.tool_name, question.context.tool_call_id) == ("fileChange", "patch_1")
    assert question.context.tool_input == {"changes": [], "reason": "write"}
    assert question.timeout_ms == 5

    t.notification("item/started", item("commandExecution", status="inProgress", **COMMAND))
    again, asked = asks(t, COMMAND_APPROVAL, {**params, "itemId": "call_1"})
    assert again == []
    assert asked.context is not None
    assert asked.context.tool_input == {"command": "touch x", "cwd": "/w"}


@pytest.mark.parametrize(
    ("outcome", "aborting", "answer"),
    [
        (InteractionOutcome("allow", "answered"), False, "accept"),
        (InteractionOutcome("allow", "answered"), True, "decline"),
        (InteractionOutcome("deny", "answered"), False, "decline"),
        (InteractionOutcome("deny", "timeout"), False, "decline"),
        (InteractionOutcome("deny", "aborted"), True, "decline"),
        (InteractionOutcome("deny", "closed"), False, "decline"),
    ],
)
def test_only_an_explicit_allow_of_a_turn_that_goes_on_accepts(
    outcome: InteractionOutcome, aborting: bool, answer: str
) -> None:
    assert decision(outcome, aborting=aborting) == answer


def mcp_elicitation(kind: str | None) -> dict[str, Any]:
    """``mcpServer/elicitation/request`` as codex 0.169.0 sends it before an MCP tool runs."""
    meta = {"codex_approval_kind": kind, "tool_name": "stamp", "tool_params": {"text": "a"}}
    return {
        "threadId": "t",
        "turnId": TURN,
        "serverName": "local",
        "mode": "form",
        "_meta": meta,
        "message": 'Allow the local MCP server to run tool "stamp"?',
        "requestedSchema": {"type": "object", "properties": {}},
    }


def test_codex_asking_to_run_an_mcp_tool_is_a_permission_about_its_running_call() -> None:
    t = Translator("turn")
    mcp_call = {"id": "call_9", "server": "local", "tool": "stamp", "arguments": {"text": "a"}}
    t.notification("item/started", item("mcpToolCall", status="inProgress", **mcp_call))
    frames, question = asks(t, MCP_ELICITATION, mcp_elicitation("mcp_tool_call"), timeout_ms=7)
    assert frames == []
    assert question.interaction_type == "PERMISSION"
    assert question.context is not None
    assert (question.context.tool_name, question.context.tool_call_id) == ("local/stamp", "call_9")
    assert question.context.tool_input == {"text": "a"}
    assert question.message == 'Allow the local MCP server to run tool "stamp"?'
    assert question.timeout_ms == 7


def test_an_mcp_servers_own_elicitation_or_one_about_no_running_call_is_not_asked() -> None:
    t = Translator("turn")
    assert t.approval(MCP_ELICITATION, mcp_elicitation(None), timeout_ms=None) is None
    assert t.approval(MCP_ELICITATION, mcp_elicitation("mcp_tool_call"), timeout_ms=None) is None


@pytest.mark.parametrize(
    ("method", "decided", "response"),
    [
        (COMMAND_APPROVAL, "accept", {"decision": "accept"}),
        (FILE_CHANGE_APPROVAL, "decline", {"decision": "decline"}),
        (MCP_ELICITATION, "accept", {"action": "accept", "content": {}}),
        (MCP_ELICITATION, "decline", {"action": "decline"}),
    ],
)
def test_an_answer_takes_the_shape_of_its_request(
    method: str, decided: str, response: dict[str, Any]
) -> None:
    assert answer(method, decided) == response


def usage(inputs: int, cached: int, outputs: int) -> TokenUsageBreakdown:
    return TokenUsageBreakdown.model_validate(
        {
            "inputTokens": inputs,
            "cachedInputTokens": cached,
            "outputTokens": outputs,
            "reasoningOutputTokens": 0,
            "totalTokens": inputs + outputs,
        }
    )


def test_a_turns_usage_is_what_the_threads_total_grew_by() -> None:
    grown = turn_usage(usage(300, 50, 20), usage(500, 80, 27))
    assert grown is not None
    assert (grown.input_tokens, grown.cache_read_tokens, grown.output_tokens) == (200, 30, 7)
    first = turn_usage(None, usage(100, 0, 5))
    assert first is not None
    assert (first.input_tokens, first.output_tokens) == (100, 5)
    assert turn_usage(usage(1, 0, 1), None) is None


def test_a_compaction_codex_makes_on_its_own_in_a_turn_is_reported_as_auto() -> None:
    t = Translator("turn")
    t.notification("item/agentMessage/delta", delta("msg", "Hi"))
    out = t.notification("item/completed", item("contextCompaction", id="cc"))
    assert [type(p) for p in out] == [TextDone, SessionCompacted]
    assert isinstance(out[1], SessionCompacted)
    assert out[1].trigger == "auto"


def test_turn_statuses_map_to_stop_reasons_and_a_failure_to_none() -> None:
    assert [stop_reason(s) for s in ("completed", "interrupted", "failed")] == [
        "end_turn",
        "cancelled",
        None,
    ]
