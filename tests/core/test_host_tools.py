"""Host tools in the runtime: the Master publishes tools, the agent calls them, and
every call ends with exactly one result whoever ends it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from rawp_adapters import HostToolCall, SessionContext, SessionOptions, Turn, TurnResult
from rawp_adapters.frames import (
    FrameMetadata,
    InteractionRequestFrame,
    SessionErrorFrame,
    TextDeltaFrame,
    ToolCatalogUpdatedFrame,
    ToolInvokeRequest,
    ToolInvokeRequestFrame,
    ToolInvokeResult,
    ToolInvokeResultFrame,
    ToolInvokeStream,
    ToolInvokeStreamFrame,
)
from rawp_adapters.testing import FunctionAdapter, deny_all, drive, stall, use_host_tool

pytestmark = pytest.mark.anyio

LOOKUP: dict[str, Any] = {
    "name": "lookup",
    "description": "Look a word up",
    "input_schema": {
        "type": "object",
        "properties": {"word": {"type": "string"}},
        "required": ["word"],
        "additionalProperties": False,
    },
}


async def test_a_host_tool_call_is_asked_streamed_and_answered(tmp_path: Path) -> None:
    adapter = FunctionAdapter(use_host_tool("lookup", {"word": "anyio"}), host_tools=True)
    async with drive(adapter, workspace=tmp_path) as d:
        await d.send(d.control.publish_tools([LOOKUP]))
        updated = await d.wait_for(ToolCatalogUpdatedFrame)
        assert updated.payload.tools == ["lookup"]
        assert [tool.name for tool in adapter.tools] == ["lookup"]
        start = await d.start_prompt("go")
        request = await d.wait_for(ToolInvokeRequestFrame)
        assert request.payload.executor == "master"
        assert request.payload.input == {"word": "anyio"}
        assert request.payload.timeout_ms == 300_000
        chain = FrameMetadata.model_validate(
            {"delegation_chain": [{"agent_id": "a", "invocation_id": "x"}]}
        )
        await d.send(d.control.tool_stream("host-1", "working… ", metadata=chain))
        await d.wait_for(TextDeltaFrame, where=lambda f: f.payload.text == "working… ")
        await d.send(d.control.tool_result("host-1", "a structured concurrency library"))
        turn = await d.wait_turn(start.payload.turn_id)
    assert turn.stop_reason == "end_turn"
    assert turn.text == "working… a structured concurrency library"
    stream = turn.of_type(ToolInvokeStreamFrame)
    assert [f.payload.output for f in stream] == ["working… "]
    assert stream[0].metadata == chain, "the Master's metadata is relayed with its output"
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert result.payload.resolution == "answered"
    assert result.payload.is_error is False


async def test_a_call_the_master_never_answers_fails_at_its_deadline(tmp_path: Path) -> None:
    adapter = FunctionAdapter(use_host_tool("lookup", {"word": "x"}), host_tools=True)
    options = SessionOptions(host_tool_timeout_ms=50)
    async with drive(adapter, workspace=tmp_path, options=options) as d:
        await d.send(d.control.publish_tools([LOOKUP]))
        await d.wait_for(ToolCatalogUpdatedFrame)
        turn = await d.prompt("go")
        await d.send(d.control.tool_result("host-1", "too late"))
        late = await d.wait_for(SessionErrorFrame)
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert result.payload.resolution == "deadline"
    assert result.payload.is_error
    assert "did not answer within 50 ms" in turn.text
    assert late.payload.error_code == "UNKNOWN_INVOCATION"
    assert "already ended (deadline)" in late.payload.message


async def test_an_abort_cancels_an_open_host_call_and_tells_the_master(tmp_path: Path) -> None:
    adapter = FunctionAdapter(
        use_host_tool("lookup", {"word": "x"}), host_tools=True, abort="notify"
    )
    async with drive(adapter, workspace=tmp_path) as d:
        await d.send(d.control.publish_tools([LOOKUP]))
        await d.wait_for(ToolCatalogUpdatedFrame)
        start = await d.start_prompt("go")
        await d.wait_for(ToolInvokeRequestFrame)
        await d.send(d.control.abort())
        turn = await d.wait_turn(start.payload.turn_id)
    assert turn.stop_reason == "cancelled"
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert result.payload.resolution == "cancelled"
    assert result.payload.is_error


@pytest.mark.parametrize(
    ("tool_name", "tool_input", "resolution"),
    [
        ("lookup", {"word": 3}, "invalid_input"),
        ("lookup", {"word": "x", "extra": True}, "invalid_input"),
        ("unpublished", {}, "unknown_tool"),
    ],
)
async def test_a_call_the_master_must_not_see_goes_back_to_the_agent_as_an_error(
    tmp_path: Path, tool_name: str, tool_input: dict[str, Any], resolution: str
) -> None:
    adapter = FunctionAdapter(use_host_tool(tool_name, tool_input), host_tools=True)
    async with drive(adapter, workspace=tmp_path) as d:
        await d.send(d.control.publish_tools([LOOKUP]))
        await d.wait_for(ToolCatalogUpdatedFrame)
        turn = await d.prompt("go")
    (request,) = turn.of_type(ToolInvokeRequestFrame)
    assert request.payload.executor is None, "nothing for the Master to answer"
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert result.payload.resolution == resolution
    assert result.payload.is_error
    assert turn.stop_reason == "end_turn"


async def test_a_denied_permission_gate_refuses_the_call_before_the_master_is_asked(
    tmp_path: Path,
) -> None:
    async def gated(turn: Turn, ctx: SessionContext) -> TurnResult:

        call = HostToolCall("c1", "lookup", {"word": "x"}, turn_id=turn.turn_id, permission=True)
        outcome = await ctx.call_host_tool(call)
        assert outcome.resolution == "denied"
        return TurnResult()

    adapter = FunctionAdapter(gated, host_tools=True)
    async with drive(adapter, workspace=tmp_path, policy=deny_all) as d:
        await d.send(d.control.publish_tools([LOOKUP]))
        await d.wait_for(ToolCatalogUpdatedFrame)
        turn = await d.prompt("go")
    (question,) = turn.of_type(InteractionRequestFrame)
    assert question.payload.context.tool_name == "lookup"
    (request,) = turn.of_type(ToolInvokeRequestFrame)
    assert request.payload.executor is None
    assert turn.frames.index(question) < turn.frames.index(request)


async def test_the_agents_own_report_of_a_host_call_is_not_passed_on_twice(
    tmp_path: Path,
) -> None:
    async def reporting(turn: Turn, ctx: SessionContext) -> TurnResult:
        outcome = await ctx.call_host_tool(
            HostToolCall("c1", "lookup", {"word": "x"}, turn_id=turn.turn_id)
        )
        # as omp does: its own events for the call come after the host's answer
        await ctx.emit(ToolInvokeStream(invocation_id="c1", output="dup", turn_id=turn.turn_id))
        await ctx.emit(
            ToolInvokeResult(
                invocation_id="c1", output_type="text", output=outcome.text, turn_id=turn.turn_id
            )
        )
        return TurnResult()

    adapter = FunctionAdapter(reporting, host_tools=True)
    async with drive(adapter, workspace=tmp_path) as d:
        await d.send(d.control.publish_tools([LOOKUP]))
        await d.wait_for(ToolCatalogUpdatedFrame)
        start = await d.start_prompt("go")
        await d.wait_for(ToolInvokeRequestFrame)
        await d.send(d.control.tool_result("c1", "ok"))
        turn = await d.wait_turn(start.payload.turn_id)
    assert not turn.of_type(ToolInvokeStreamFrame)
    assert len(turn.of_type(ToolInvokeResultFrame)) == 1


async def test_a_host_call_that_reuses_the_id_of_the_agents_own_tool_call_gets_its_own(
    tmp_path: Path,
) -> None:
    async def nested(turn: Turn, ctx: SessionContext) -> TurnResult:
        # as omp's `write` to `xd://lookup` does: the host call runs inside the write
        tid = turn.turn_id
        write = ToolInvokeRequest(
            invocation_id="c1", tool_name="write", input={"path": "xd://lookup"}, turn_id=tid
        )
        await ctx.emit(write)
        outcome = await ctx.call_host_tool(HostToolCall("c1", "lookup", {"word": "x"}, tid))
        await ctx.emit(
            ToolInvokeResult(
                invocation_id="c1", output_type="text", output=outcome.text, turn_id=tid
            )
        )
        return TurnResult()

    adapter = FunctionAdapter(nested, host_tools=True)
    async with drive(adapter, workspace=tmp_path) as d:
        await d.send(d.control.publish_tools([LOOKUP]))
        await d.wait_for(ToolCatalogUpdatedFrame)
        start = await d.start_prompt("go")
        host = await d.wait_for(ToolInvokeRequestFrame, where=lambda f: f.payload.executor)
        await d.send(d.control.tool_result(host.payload.invocation_id, "found"))
        turn = await d.wait_turn(start.payload.turn_id)
    requests = [r.payload for r in turn.of_type(ToolInvokeRequestFrame)]
    assert [(r.tool_name, r.executor) for r in requests] == [("write", None), ("lookup", "master")]
    assert requests[1].invocation_id != "c1"
    results = {r.payload.invocation_id: r.payload for r in turn.of_type(ToolInvokeResultFrame)}
    assert results.keys() == {"c1", requests[1].invocation_id}
    assert results[requests[1].invocation_id].resolution == "answered"
    assert results["c1"].output == "found", "the agent's own call ended with the Master's answer"


async def test_an_answer_for_no_call_is_reported_and_never_applied(tmp_path: Path) -> None:
    adapter = FunctionAdapter(host_tools=True)
    async with drive(adapter, workspace=tmp_path) as d:
        await d.send(d.control.tool_result("nobody", "x"))
        error = await d.wait_for(SessionErrorFrame)
    assert error.payload.error_code == "UNKNOWN_INVOCATION"
    assert error.payload.fatal is False


@pytest.mark.parametrize(
    ("tools", "problem"),
    [
        ([LOOKUP, LOOKUP], "published twice"),
        ([{**LOOKUP, "input_schema": {"type": 12}}], "not a JSON Schema"),
        ([{**LOOKUP, "input_schema": {"type": "string"}}], "must describe an object"),
    ],
)
async def test_a_catalog_that_cannot_be_checked_is_refused_whole(
    tmp_path: Path, tools: list[dict[str, Any]], problem: str
) -> None:
    adapter = FunctionAdapter(host_tools=True)
    async with drive(adapter, workspace=tmp_path) as d:
        await d.send(d.control.publish_tools(tools))
        error = await d.wait_for(SessionErrorFrame)
    assert error.payload.error_code == "INVALID_TOOL_CATALOG"
    assert problem in error.payload.message
    assert adapter.tools == []


async def test_an_agent_without_host_tools_answers_unsupported(tmp_path: Path) -> None:
    async with drive(FunctionAdapter(), workspace=tmp_path) as d:
        await d.send(d.control.publish_tools([LOOKUP]))
        error = await d.wait_for(SessionErrorFrame)
    assert error.payload.error_code == "UNSUPPORTED"


async def test_the_session_end_fails_an_open_call(tmp_path: Path) -> None:
    adapter = FunctionAdapter(use_host_tool("lookup", {"word": "x"}), host_tools=True)
    async with drive(adapter, workspace=tmp_path) as d:
        await d.send(d.control.publish_tools([LOOKUP]))
        await d.wait_for(ToolCatalogUpdatedFrame)
        await d.start_prompt("go")
        await d.wait_for(ToolInvokeRequestFrame)
        await d.end()
    (result,) = d.of_type(ToolInvokeResultFrame)
    assert result.payload.resolution == "session_end"


async def test_a_host_call_with_no_turn_running_is_cancelled(tmp_path: Path) -> None:
    adapter = FunctionAdapter(stall(), host_tools=True)
    async with drive(adapter, workspace=tmp_path) as d:
        await d.send(d.control.publish_tools([LOOKUP]))
        await d.wait_for(ToolCatalogUpdatedFrame)
        assert adapter.ctx is not None
        outcome = await adapter.ctx.call_host_tool(
            HostToolCall("c9", "lookup", {"word": "x"}, turn_id="no-such-turn")
        )
    assert outcome.resolution == "cancelled"
    assert not d.of_type(ToolInvokeRequestFrame)


async def test_the_agents_own_report_of_a_running_host_call_in_a_batch_is_dropped(
    tmp_path: Path,
) -> None:
    echoed = anyio.Event()

    async def reporting(turn: Turn, ctx: SessionContext) -> TurnResult:
        async def echo_progress(output: str) -> None:
            # as omp does: its own update events while the Master streams
            await ctx.emit_many(
                [ToolInvokeStream(invocation_id="c1", output=output, turn_id=turn.turn_id)]
            )
            echoed.set()

        call = HostToolCall("c1", "lookup", {"word": "x"}, turn_id=turn.turn_id)
        await ctx.call_host_tool(call, echo_progress)
        return TurnResult()

    adapter = FunctionAdapter(reporting, host_tools=True)
    async with drive(adapter, workspace=tmp_path) as d:
        await d.send(d.control.publish_tools([LOOKUP]))
        await d.wait_for(ToolCatalogUpdatedFrame)
        start = await d.start_prompt("go")
        await d.wait_for(ToolInvokeRequestFrame)
        await d.send(d.control.tool_stream("c1", "half"))
        with anyio.fail_after(5):
            await echoed.wait()
        await d.send(d.control.tool_result("c1", "ok"))
        turn = await d.wait_turn(start.payload.turn_id)
    assert [f.payload.output for f in turn.of_type(ToolInvokeStreamFrame)] == ["half"]
