"""FunctionAdapter, the testing kit's offline agent: its turns are run by a function."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from rawp_adapters import SessionContext, SessionOptions, Turn, TurnResult
from rawp_adapters.frames import (
    AgentError,
    AgentInfo,
    Mode,
    SessionCapabilitiesFrame,
    SessionCompacted,
    SessionCompactedFrame,
    TextDeltaFrame,
    TextDoneFrame,
    ToolInvokeRequestFrame,
    ToolInvokeResultFrame,
)
from rawp_adapters.testing import (
    FunctionAdapter,
    allow_all,
    ask_permission,
    deny_all,
    drive,
    run_conformance,
    say,
    stall,
)

pytestmark = pytest.mark.anyio

NO_GRACE = SessionOptions(abort_grace=60.0)
"""An abort grace far longer than any test's deadline: a turn that ends after an abort
ended because the adapter ended it, not the session."""


async def test_by_default_it_says_hello_in_two_deltas_then_the_whole_text(
    tmp_path: Path,
) -> None:
    adapter = FunctionAdapter()
    async with drive(adapter, workspace=tmp_path) as d:
        turn = await d.prompt("hi")
    assert [f.payload.text for f in turn.of_type(TextDeltaFrame)] == ["Hel", "lo"]
    assert [f.payload.text for f in turn.of_type(TextDoneFrame)] == ["Hello"]
    assert turn.stop_reason == "end_turn"
    assert [t.text for t in adapter.prompts] == ["hi"]
    assert adapter.closed


async def test_say_streams_each_part_of_its_block_then_the_whole_text(tmp_path: Path) -> None:
    async with drive(
        FunctionAdapter(say("One ", "two ", "three.", index=2)), workspace=tmp_path
    ) as d:
        turn = await d.prompt("count")
    deltas = turn.of_type(TextDeltaFrame)
    assert [(f.payload.index, f.payload.text) for f in deltas] == [
        (2, "One "),
        (2, "two "),
        (2, "three."),
    ]
    (done,) = turn.of_type(TextDoneFrame)
    assert (done.payload.index, done.payload.text) == (2, "One two three.")


async def test_each_turn_is_run_by_the_function_with_its_turn_and_the_sessions_context(
    tmp_path: Path,
) -> None:
    seen: list[tuple[str, Path]] = []

    async def echo(turn: Turn, ctx: SessionContext) -> TurnResult:
        seen.append((turn.text, ctx.workspace))
        return await say(turn.text.upper())(turn, ctx)

    async with drive(FunctionAdapter(echo), workspace=tmp_path) as d:
        first = await d.prompt("one")
        second = await d.prompt("two")
    assert (first.text, second.text) == ("ONE", "TWO")
    assert seen == [("one", tmp_path), ("two", tmp_path)]


async def test_a_wait_that_times_out_says_what_came_and_what_the_agents_errors_said(
    tmp_path: Path,
) -> None:
    async def fails(turn: Turn, ctx: SessionContext) -> TurnResult:
        for n in range(5):
            message = f"error {n}: " + "x" * 1000
            await ctx.emit(AgentError(severity="error", error_code="AGENT_ERROR", message=message))
        return TurnResult(stop_reason="error")

    async with drive(FunctionAdapter(fails), workspace=tmp_path) as d:
        await d.prompt("go")
        with pytest.raises(TimeoutError) as raised:
            await d.wait_for(ToolInvokeRequestFrame, timeout=0.5)
    message = str(raised.value)
    quoted = [repr((f"error {n}: " + "x" * 1000)[:300]) for n in (2, 3, 4)]
    assert "agent.error x5, session.usage, session.turn.end" in message
    assert "error 1:" not in message  # the last three only, each cut short
    assert message.endswith(f"the agent's errors: {', '.join(quoted)}")


async def test_ask_permission_runs_the_tool_only_after_an_allow(tmp_path: Path) -> None:
    ran: list[Mapping[str, Any]] = []

    async def run(tool_input: Mapping[str, Any], ctx: SessionContext) -> str:
        ran.append(tool_input)
        return "done"

    function = ask_permission("bash", {"command": "ls"}, call_id="c9", timeout_ms=5000, run=run)
    async with drive(FunctionAdapter(function), workspace=tmp_path, policy=allow_all) as d:
        allowed = await d.prompt("go")
    async with drive(FunctionAdapter(function), workspace=tmp_path, policy=deny_all) as d:
        denied = await d.prompt("go")
    assert ran == [{"command": "ls"}]
    (request,) = allowed.of_type("agent.interaction.request")
    assert request.payload.context.tool_name == "bash"
    assert request.payload.context.tool_input == {"command": "ls"}
    assert request.payload.context.tool_call_id == "c9"
    assert request.payload.timeout_ms == 5000
    (call,) = allowed.of_type(ToolInvokeRequestFrame)
    assert (call.payload.invocation_id, call.payload.tool_name) == ("c9", "bash")
    (result,) = allowed.of_type(ToolInvokeResultFrame)
    assert (result.payload.output, result.payload.is_error) == ("done", False)
    (result,) = denied.of_type(ToolInvokeResultFrame)
    assert (result.payload.output, result.payload.is_error) == ("not allowed (answered)", True)
    assert allowed.stop_reason == denied.stop_reason == "end_turn"


async def test_ask_permission_without_a_tool_function_reports_that_the_tool_ran(
    tmp_path: Path,
) -> None:
    async with drive(FunctionAdapter(ask_permission("write")), workspace=tmp_path) as d:
        turn = await d.prompt("go")
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert result.payload.output == "ran write"


async def test_an_abort_is_recorded_and_signalled_and_the_function_decides_when_to_end(
    tmp_path: Path,
) -> None:
    adapter = FunctionAdapter()
    went_on = anyio.Event()

    async def finish_after_abort(turn: Turn, ctx: SessionContext) -> TurnResult:
        await adapter.abort_event.wait()
        went_on.set()  # not cancelled: the function runs on after the abort
        return TurnResult()

    adapter.function = finish_after_abort
    async with drive(adapter, workspace=tmp_path, options=NO_GRACE, timeout=10) as d:
        start = await d.start_prompt("long")
        await d.send(d.control.abort())
        turn = await d.wait_turn(start.payload.turn_id)
    assert went_on.is_set()
    assert adapter.aborted == [start.payload.turn_id]
    assert turn.stop_reason == "cancelled"


async def test_with_abort_cancel_an_abort_cancels_the_function_and_ends_the_turn_cancelled(
    tmp_path: Path,
) -> None:
    adapter = FunctionAdapter(stall("Working"), abort="cancel")
    async with drive(adapter, workspace=tmp_path, options=NO_GRACE, timeout=10) as d:
        start = await d.start_prompt("long")
        await d.wait_for(TextDeltaFrame)
        await d.send(d.control.abort())
        turn = await d.wait_turn(start.payload.turn_id)
    assert turn.text == "Working"
    assert turn.stop_reason == "cancelled"
    assert adapter.aborted == [start.payload.turn_id]
    assert adapter.abort_event.is_set()


async def test_each_turn_after_an_abort_gets_a_fresh_abort_event(tmp_path: Path) -> None:
    adapter = FunctionAdapter(stall(), abort="cancel")
    async with drive(adapter, workspace=tmp_path, options=NO_GRACE, timeout=10) as d:
        start = await d.start_prompt("first")
        await d.send(d.control.abort())
        await d.wait_turn(start.payload.turn_id)
        adapter.function = say("Hello")
        turn = await d.prompt("second")
        assert not adapter.abort_event.is_set()
    assert turn.stop_reason == "end_turn"


async def test_without_hooks_it_can_neither_compact_nor_plan(tmp_path: Path) -> None:
    async with drive(FunctionAdapter(), workspace=tmp_path) as d:
        caps = await d.wait_for(SessionCapabilitiesFrame)
    features = caps.payload.features
    assert (features.adapter_type, features.abort) == ("function", True)
    assert not features.context_compaction
    assert not features.plan_mode


async def test_compaction_and_mode_hooks_are_reported_run_and_recorded(tmp_path: Path) -> None:
    modes_seen: list[Mode] = []

    async def compact(instructions: str | None, ctx: SessionContext) -> None:
        await ctx.emit(SessionCompacted(trigger="manual", summary=f"kept {instructions}"))

    async def switch_mode(mode: Mode, ctx: SessionContext) -> None:
        modes_seen.append(mode)

    adapter = FunctionAdapter(compact=compact, switch_mode=switch_mode)
    async with drive(adapter, workspace=tmp_path) as d:
        caps = await d.wait_for(SessionCapabilitiesFrame)
        await d.send(d.control.compact("the plan"))
        compacted = await d.wait_for(SessionCompactedFrame)
        await d.wait_for(
            "agent.state.changed",
            where=lambda f: f.payload.state == "idle",
            after=d.frames.index(compacted),
        )
        await d.send(d.control.switch_mode("plan"))
        turn = await d.prompt("after")  # runs after the switch
    assert caps.payload.features.context_compaction
    assert caps.payload.features.plan_mode
    assert compacted.payload.summary == "kept the plan"
    assert adapter.compactions == ["the plan"]
    assert adapter.modes == modes_seen == ["plan"]
    assert turn.text == "Hello"


async def test_the_agent_it_names_is_reported_in_the_capabilities(tmp_path: Path) -> None:
    adapter = FunctionAdapter(agent_info=AgentInfo(name="fake-agent", version="9.9"))
    async with drive(adapter, workspace=tmp_path) as d:
        caps = await d.wait_for(SessionCapabilitiesFrame)
    assert caps.payload.agent == AgentInfo(name="fake-agent", version="9.9")


async def test_a_function_adapter_that_stalls_on_long_prompts_passes_the_conformance_run(
    tmp_path: Path,
) -> None:
    async def reply(turn: Turn, ctx: SessionContext) -> TurnResult:
        function = stall("Thinking") if turn.text == "take your time" else say("Hi")
        return await function(turn, ctx)

    await run_conformance(
        lambda: FunctionAdapter(reply, abort="cancel"),
        workspace=tmp_path,
        long_prompt="take your time",
        timeout=10,
    )
