"""FunctionCore, the SDK's offline agent core: its replies are a function."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from rawp_adapter_sdk import Allow, CoreFeatures, Deny, FunctionCore, PermissionRequest, SdkAdapter
from rawp_adapter_sdk.events import CoreEvent, TextChunk, ThinkingChunk, UsageReport
from rawp_adapter_sdk.testing import CoreRun, ask_permission, say, stall

from rawp_adapters.frames import (
    InteractionRequestFrame,
    SessionCapabilitiesFrame,
    TextDeltaFrame,
    TextDoneFrame,
    ToolInvokeResultFrame,
)
from rawp_adapters.testing import allow_all, deny_all, drive, never_answer

pytestmark = pytest.mark.anyio


async def test_by_default_it_says_hello_in_two_chunks_and_reports_itself(tmp_path: Path) -> None:
    core = FunctionCore()
    async with drive(SdkAdapter.for_core(core), workspace=tmp_path) as d:
        caps = await d.wait_for(SessionCapabilitiesFrame)
        turn = await d.prompt("hi")
    assert [f.payload.text for f in turn.of_type(TextDeltaFrame)] == ["Hel", "lo"]
    assert [f.payload.text for f in turn.of_type(TextDoneFrame)] == ["Hello"]
    assert turn.stop_reason == "end_turn"
    assert caps.payload.agent is not None
    assert (caps.payload.agent.name, caps.payload.agent.version) == ("function", None)
    features = caps.payload.features
    assert (features.thinking, features.tool_events, features.permission_requests) == (
        True,
        True,
        True,
    )
    assert features.abort
    assert core.prompts == ["hi"]
    assert core.closed


async def test_the_function_gets_the_prompt_and_the_environment_and_its_events_stream(
    tmp_path: Path,
) -> None:
    async def reply(prompt: str, run: CoreRun) -> AsyncIterator[CoreEvent]:
        yield ThinkingChunk(0, f"in {run.env.workspace.name}")
        yield TextChunk(1, prompt[::-1])
        yield UsageReport(input_tokens=3, output_tokens=1)

    core = FunctionCore(reply, name="mirror", version="2", features=CoreFeatures(thinking=True))
    async with drive(SdkAdapter.for_core(core), workspace=tmp_path) as d:
        caps = await d.wait_for(SessionCapabilitiesFrame)
        turn = await d.prompt("olleh")
    assert turn.text == "hello"
    (thinking,) = turn.of_type("agent.thinking.done")
    assert thinking.payload.text == f"in {tmp_path.name}"
    assert turn.end.payload.usage is not None
    assert turn.end.payload.usage.input_tokens == 3
    assert caps.payload.agent is not None
    assert (caps.payload.agent.name, caps.payload.agent.version) == ("mirror", "2")
    assert not caps.payload.features.permission_requests


async def test_say_chunks_its_parts_into_one_block(tmp_path: Path) -> None:
    async with drive(
        SdkAdapter.for_core(FunctionCore(say("a", "b", index=3))), workspace=tmp_path
    ) as d:
        turn = await d.prompt("go")
    assert [(f.payload.index, f.payload.text) for f in turn.of_type(TextDeltaFrame)] == [
        (3, "a"),
        (3, "b"),
    ]
    (done,) = turn.of_type(TextDoneFrame)
    assert done.payload.text == "ab"


async def test_ask_permission_asks_then_reports_the_tool_run_and_records_the_decision(
    tmp_path: Path,
) -> None:
    core = FunctionCore(ask_permission("Bash", {"command": "ls"}, call_id="c1", output="a b"))
    async with drive(SdkAdapter.for_core(core), workspace=tmp_path, policy=allow_all) as d:
        turn = await d.prompt("go")
    (request,) = turn.of_type(InteractionRequestFrame)
    assert request.payload.context.tool_name == "Bash"
    assert request.payload.context.tool_input == {"command": "ls"}
    assert request.payload.context.tool_call_id == "c1"
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert (result.payload.output, result.payload.is_error) == ("a b", False)
    assert core.decisions == {"c1": Allow()}
    assert turn.stop_reason == "end_turn"


async def test_a_denied_tool_call_ends_in_an_error_result_with_the_deny_message(
    tmp_path: Path,
) -> None:
    core = FunctionCore(ask_permission("Bash"))
    async with drive(SdkAdapter.for_core(core), workspace=tmp_path, policy=deny_all) as d:
        turn = await d.prompt("go")
    decision = core.decisions["call-1"]
    assert isinstance(decision, Deny)
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert (result.payload.output, result.payload.is_error) == (decision.message, True)
    assert turn.stop_reason == "end_turn"


async def test_a_denial_by_abort_stops_the_turn_cancelled(tmp_path: Path) -> None:
    core = FunctionCore(ask_permission("Bash"))
    async with drive(SdkAdapter.for_core(core), workspace=tmp_path, policy=never_answer) as d:
        start = await d.start_prompt("go")
        await d.wait_for(InteractionRequestFrame)
        await d.send(d.control.abort())
        turn = await d.wait_turn(start.payload.turn_id)
    decision = core.decisions["call-1"]
    assert isinstance(decision, Deny)
    assert decision.stops_turn
    assert turn.stop_reason == "cancelled"


async def test_a_request_without_a_call_id_is_recorded_by_its_tool_name(tmp_path: Path) -> None:
    async def reply(prompt: str, run: CoreRun) -> AsyncIterator[CoreEvent]:
        await run.permission(PermissionRequest("Read", {"path": "a"}))
        yield TextChunk(0, "read")

    core = FunctionCore(reply)
    async with drive(SdkAdapter.for_core(core), workspace=tmp_path, policy=allow_all) as d:
        await d.prompt("go")
    assert core.decisions == {"Read": Allow()}


async def test_stall_waits_for_the_cancel_and_each_run_gets_a_fresh_cancel_event(
    tmp_path: Path,
) -> None:
    core = FunctionCore(stall("Working"))
    async with drive(SdkAdapter.for_core(core), workspace=tmp_path) as d:
        start = await d.start_prompt("long")
        await d.wait_for(TextDeltaFrame)
        await d.send(d.control.abort())
        stalled = await d.wait_turn(start.payload.turn_id)
        assert core.cancelled.is_set()
        core.function = say("Hello")
        again = await d.prompt("short")
        assert not core.cancelled.is_set()
    assert (stalled.text, stalled.stop_reason) == ("Working", "cancelled")
    assert again.stop_reason == "end_turn"
    assert core.prompts == ["long", "short"]
