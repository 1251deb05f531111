"""The spans and metrics of a session, as the GenAI semantic conventions name them:
the agent's start, a turn, its tool calls and questions, a host call, an abort and a
delegation, each under the Master's trace."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode

from rawp_adapters import (
    ClientFrame,
    Question,
    SessionContext,
    Turn,
    TurnResult,
    open_session,
)
from rawp_adapters.frames import (
    AgentInfo,
    InteractionRequestFrame,
    TextDeltaFrame,
    TokenUsage,
    ToolInvokeRequest,
    ToolInvokeResult,
    TurnEndFrame,
)
from rawp_adapters.host import Delegation, HostTools, ToolCall, allow_all
from rawp_adapters.testing import (
    FunctionAdapter,
    assert_valid_stream,
    say,
    stall,
    use_host_tool,
)
from tests.host.serving import WAIT, serve_prompt
from tests.telemetry.recorded import Recorded

pytestmark = pytest.mark.anyio

AGENT = AgentInfo(name="scripted", version="1.2.3", model="model-7")


def answered(usage: TokenUsage) -> FunctionAdapter:
    inner = say("Hel", "lo")

    async def turn(turn: Turn, ctx: SessionContext) -> TurnResult:
        await inner(turn, ctx)
        return TurnResult(usage=usage)

    return FunctionAdapter(turn, agent_info=AGENT)


async def frames_of_one_turn(
    adapter: FunctionAdapter, workspace: Path, *, answer: bool = True
) -> list[ClientFrame]:
    """Run one prompt, sent in the Master's span ``master``; allow the first question
    (when ``answer``), leave any other to its deadline; close after the turn."""
    frames: list[ClientFrame] = []
    tracer = trace.get_tracer("tests")
    with anyio.fail_after(WAIT):
        async with open_session(adapter, workspace=workspace) as session:
            with tracer.start_as_current_span("master"):
                await session.send(session.control.prompt("hi"))
            asked = 0
            async for frame in session:
                frames.append(frame)
                if isinstance(frame, InteractionRequestFrame):
                    asked += 1
                    if answer and asked == 1:
                        await session.send(session.control.allow(frame.payload.interaction_id))
                if isinstance(frame, TurnEndFrame):
                    await session.close()
    assert_valid_stream(frames)
    return frames


async def test_a_turn_is_an_invoke_agent_span_under_the_masters_with_usage_and_finish_reason(
    tmp_path: Path, recorded: Recorded
) -> None:
    adapter = answered(TokenUsage(input_tokens=11, output_tokens=7, cache_read_tokens=3))
    frames = await frames_of_one_turn(adapter, tmp_path)
    session_id = frames[0].session_id
    master = recorded.span("master")
    turn = recorded.span("invoke_agent scripted")
    start = recorded.span("create_agent scripted")
    assert turn.parent is not None
    assert master.context is not None
    assert turn.parent.span_id == master.context.span_id, "a child of the Master's span"
    assert [link.context for link in turn.links] == [start.context], "linked to the start"
    assert turn.kind == SpanKind.INTERNAL, "an in-process agent"
    scope = turn.instrumentation_scope
    assert scope is not None
    assert (scope.name, scope.schema_url) == (
        "rawp_adapters",
        "https://opentelemetry.io/schemas/1.44.0",  # the version specs/telemetry.md names
    )
    assert dict(turn.attributes or {}) | {"rawp.turn.id": "-", "rawp.prompt.id": "-"} == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "scripted",
        "gen_ai.agent.version": "1.2.3",
        "gen_ai.request.model": "model-7",
        "gen_ai.conversation.id": session_id,
        "gen_ai.response.finish_reasons": ("end_turn",),
        "gen_ai.usage.input_tokens": 11,
        "gen_ai.usage.output_tokens": 7,
        "gen_ai.usage.cache_read.input_tokens": 3,
        "rawp.turn.id": "-",
        "rawp.prompt.id": "-",
    }
    assert "gen_ai.input.messages" not in (turn.attributes or {}), "no content unless asked"
    assert turn.status.status_code == StatusCode.UNSET
    tokens = {
        p.attributes["gen_ai.token.type"]: p.value
        for p in recorded.points("gen_ai.client.token.usage")
    }
    assert tokens == {"input": 11, "output": 7}
    [duration] = recorded.points("gen_ai.client.operation.duration")
    assert duration.attributes == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "scripted",
        "gen_ai.request.model": "model-7",
    }
    assert [p.value for p in recorded.points("rawp.sessions.open")] == [0], "opened, closed"
    counted = {p.attributes["gen_ai.agent.name"]: p.value for p in recorded.points("rawp.frames")}
    assert counted == {"scripted": len(frames)}


async def test_prompts_and_answers_are_recorded_only_when_the_master_opts_in(
    tmp_path: Path, recorded: Recorded, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    await frames_of_one_turn(answered(TokenUsage()), tmp_path)
    attributes = recorded.span("invoke_agent scripted").attributes or {}
    assert attributes["gen_ai.input.messages"] == (
        '[{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]'
    )
    assert attributes["gen_ai.output.messages"] == (
        '[{"role": "assistant", "parts": [{"type": "text", "content": "Hello"}]}]'
    )


def two_gated_tools() -> FunctionAdapter:
    """Asks to run ``write`` (the test allows it), then ``bash`` (left to its deadline)."""

    async def turn(turn: Turn, ctx: SessionContext) -> TurnResult:
        for call_id, tool, timeout_ms in (("c1", "write", None), ("c2", "bash", 50)):
            await ctx.emit(
                ToolInvokeRequest(
                    invocation_id=call_id, tool_name=tool, input={}, turn_id=turn.turn_id
                )
            )
            question = Question.permission(
                tool, tool_call_id=call_id, turn_id=turn.turn_id, timeout_ms=timeout_ms
            )
            allowed = (await ctx.interact(question)).allowed
            await ctx.emit(
                ToolInvokeResult(
                    invocation_id=call_id,
                    output_type="text",
                    output="done" if allowed else "denied",
                    is_error=not allowed,
                    turn_id=turn.turn_id,
                )
            )
        return TurnResult()

    return FunctionAdapter(turn, agent_info=AGENT)


async def test_each_tool_call_and_permission_wait_is_a_span_under_its_turn(
    tmp_path: Path, recorded: Recorded
) -> None:
    frames = await frames_of_one_turn(two_gated_tools(), tmp_path)
    turn = recorded.span("invoke_agent scripted")
    assert recorded.children(turn) == ["execute_tool write", "execute_tool bash"]
    write, bash = recorded.span("execute_tool write"), recorded.span("execute_tool bash")
    assert recorded.children(write) == ["await_permission write"]
    assert recorded.children(bash) == ["await_permission bash"]
    assert (write.attributes or {})["gen_ai.tool.call.id"] == "c1"
    assert write.status.status_code == StatusCode.UNSET
    assert bash.status.status_code == StatusCode.ERROR
    assert (bash.attributes or {})["error.type"] == "tool_error"
    allowed = recorded.span("await_permission write").attributes or {}
    timed_out = recorded.span("await_permission bash").attributes or {}
    assert (allowed["rawp.interaction.outcome"], allowed["rawp.interaction.decided_by"]) == (
        "allowed",
        "master",
    )
    assert (timed_out["rawp.interaction.outcome"], timed_out["rawp.interaction.decided_by"]) == (
        "timed_out",
        "deadline",
    )
    waits = {
        p.attributes["rawp.interaction.decided_by"]: p.count
        for p in recorded.points("rawp.interaction.wait.duration")
    }
    assert waits == {"master": 1, "deadline": 1}
    tools = {
        (p.attributes["gen_ai.tool.name"], p.attributes.get("error.type"))
        for p in recorded.points("gen_ai.client.operation.duration")
        if p.attributes["gen_ai.operation.name"] == "execute_tool"
    }
    assert tools == {("write", None), ("bash", "tool_error")}
    ids = {frames[0].session_id, "c1", "c2"}
    ids |= {f.payload.interaction_id for f in frames if isinstance(f, InteractionRequestFrame)}
    ids |= {f.payload.turn_id for f in frames if isinstance(f, TurnEndFrame)}
    labels = {value for p in recorded.points() for value in p.attributes.values()}
    assert labels, "metrics were recorded"
    assert not labels & ids, "no id is a metric's label"


async def serve_a_lookup(workspace: Path) -> list[str]:
    """A turn whose agent calls the Master's tool ``lookup`` with ``{"word": "otel"}``;
    the name of the span current while the tool ran."""
    tools = HostTools()
    seen_in: list[str] = []

    @tools.tool(description="Look a word up")
    async def lookup(word: str, call: ToolCall) -> str:
        seen_in.append(getattr(trace.get_current_span(), "name", ""))
        return f"{word}: 2 meanings"

    adapter = FunctionAdapter(use_host_tool("lookup", {"word": "otel"}), host_tools=True)
    await serve_prompt(adapter, workspace, tools, allow_all)
    return seen_in


async def test_a_host_call_is_an_execute_tool_span_the_masters_tool_runs_in(
    tmp_path: Path, recorded: Recorded
) -> None:
    seen_in = await serve_a_lookup(tmp_path)
    span = recorded.span("execute_tool lookup")
    assert recorded.children(recorded.span("invoke_agent function")) == ["execute_tool lookup"]
    attributes = span.attributes or {}
    assert (attributes["rawp.tool.executor"], attributes["rawp.tool.resolution"]) == (
        "master",
        "answered",
    )
    assert "gen_ai.tool.call.arguments" not in attributes, "no content unless asked"
    assert "gen_ai.tool.call.result" not in attributes, "no content unless asked"
    assert seen_in == ["execute_tool lookup"], "the Master's tool runs in the call's span"


async def test_tool_arguments_and_results_are_recorded_only_when_the_master_opts_in(
    tmp_path: Path, recorded: Recorded, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    await serve_a_lookup(tmp_path)
    attributes = recorded.span("execute_tool lookup").attributes or {}
    assert attributes["gen_ai.tool.call.arguments"] == '{"word": "otel"}'
    assert attributes["gen_ai.tool.call.result"] == "otel: 2 meanings"


async def test_an_aborted_turn_ends_cancelled_without_an_error(
    tmp_path: Path, recorded: Recorded
) -> None:
    adapter = FunctionAdapter(stall("working"), abort="cancel")
    served = await serve_prompt(adapter, tmp_path, abort_when=TextDeltaFrame)
    assert served.of_type(TurnEndFrame)[0].payload.stop_reason == "cancelled"
    turn = recorded.span("invoke_agent function")
    assert (turn.attributes or {})["gen_ai.response.finish_reasons"] == ("cancelled",)
    assert turn.status.status_code == StatusCode.UNSET


async def test_a_failed_turn_carries_the_agents_error_code_as_error_type(
    tmp_path: Path, recorded: Recorded
) -> None:
    async def failing(turn: Turn, ctx: SessionContext) -> TurnResult:
        raise RuntimeError("the agent broke")

    await serve_prompt(FunctionAdapter(failing), tmp_path)
    turn = recorded.span("invoke_agent function")
    assert turn.status.status_code == StatusCode.ERROR
    assert (turn.attributes or {})["error.type"] == "AGENT_ERROR"
    [error_point] = [
        p
        for p in recorded.points("gen_ai.client.operation.duration")
        if p.attributes.get("error.type") == "AGENT_ERROR"
    ]
    assert error_point.count == 1


async def test_a_sub_agents_turn_is_nested_under_the_delegating_tool_call(
    tmp_path: Path, recorded: Recorded
) -> None:
    delegation = Delegation(lambda: FunctionAdapter(say("sub"), agent_info=AGENT))
    parent = FunctionAdapter(
        use_host_tool("Task", {"description": "a sub-task", "prompt": "go"}), host_tools=True
    )
    await serve_prompt(parent, tmp_path, HostTools([delegation]))
    call = recorded.span("execute_tool Task")
    assert recorded.children(recorded.span("invoke_agent function")) == ["execute_tool Task"]
    assert recorded.children(call) == ["create_agent scripted", "invoke_agent scripted"]
    child = recorded.span("invoke_agent scripted")
    assert child.context is not None
    assert call.context is not None
    assert child.context.trace_id == call.context.trace_id, "one trace"


async def test_a_traceparent_in_the_prompts_metadata_is_the_turns_parent(
    tmp_path: Path, recorded: Recorded
) -> None:
    trace_id, span_id = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
    async with open_session(FunctionAdapter(), workspace=tmp_path) as session:
        prompt = session.control.prompt("hi").model_dump(mode="json")
        prompt["metadata"] = {"traceparent": f"00-{trace_id}-{span_id}-01"}
        with anyio.fail_after(WAIT):
            await session.send_line(json.dumps(prompt))
            async for frame in session:
                if isinstance(frame, TurnEndFrame):
                    break
    turn = recorded.span("invoke_agent function")
    assert turn.context is not None
    assert turn.parent is not None
    assert (f"{turn.context.trace_id:032x}", f"{turn.parent.span_id:016x}") == (
        trace_id,
        span_id,
    )
