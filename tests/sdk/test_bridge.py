"""The permission bridge and the adapter's turn handling, with a scripted core."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import anyio
import pytest
from rawp_adapter_sdk import (
    Allow,
    CoreError,
    Deny,
    PermissionDecision,
    PermissionRequest,
    SdkAdapter,
)
from rawp_adapter_sdk.events import CoreEvent, Stopped, TextChunk, ToolFinished, ToolStarted
from rawp_adapter_sdk.testing import CoreFunction, CoreRun, FunctionCore, say, stall

from rawp_adapters import SessionOptions
from rawp_adapters.frames import (
    AgentErrorFrame,
    InteractionRequestFrame,
    SessionClosedFrame,
    SessionErrorFrame,
)
from rawp_adapters.testing import Reply, allow_all, deny_all, drive, never_answer

pytestmark = pytest.mark.anyio


def for_call(call_id: str) -> Callable[[InteractionRequestFrame], bool]:
    return lambda frame: frame.payload.context.tool_call_id == call_id


def adapter(core: FunctionCore, *, timeout_ms: int = 60_000) -> SdkAdapter:
    return SdkAdapter.for_core(core, permission_timeout_ms=timeout_ms)


def asking(*call_ids: str) -> CoreFunction:
    """Start a tool call per id, ask for all of them at once, then end each call."""

    async def function(prompt: str, run: CoreRun) -> AsyncIterator[CoreEvent]:
        decisions: dict[str, PermissionDecision] = {}

        async def ask(call_id: str) -> None:
            request = PermissionRequest("Bash", {"command": call_id}, call_id)
            decisions[call_id] = await run.permission(request)

        for call_id in call_ids:
            yield ToolStarted(call_id, "Bash", {"command": call_id})
        async with anyio.create_task_group() as tg:
            for call_id in call_ids:
                tg.start_soon(ask, call_id)
        stops = False
        for call_id in call_ids:
            decision = decisions[call_id]
            if isinstance(decision, Deny):
                stops = stops or decision.stops_turn
                yield ToolFinished(call_id, decision.message, is_error=True)
            else:
                yield ToolFinished(call_id, f"ran {call_id}")
        yield Stopped("cancelled" if stops else "end_turn")

    return function


async def test_a_permission_request_names_the_tool_its_input_call_id_and_deadline(
    tmp_path: Path,
) -> None:
    core = FunctionCore(asking("call-1"))
    async with drive(adapter(core, timeout_ms=1234), workspace=tmp_path) as d:
        turn = await d.prompt("go")
        (request,) = turn.of_type("agent.interaction.request")
        assert isinstance(request, InteractionRequestFrame)
        payload = request.payload
        assert payload.interaction_type == "PERMISSION"
        assert payload.turn_id == turn.turn_id
        assert payload.timeout_ms == 1234
        assert payload.context.tool_name == "Bash"
        assert payload.context.tool_input == {"command": "call-1"}
        assert payload.context.tool_call_id == "call-1"
    assert core.decisions == {"call-1": Allow()}


async def test_an_explicit_deny_tells_the_model_the_user_refused(tmp_path: Path) -> None:
    core = FunctionCore(asking("call-1"))
    async with drive(adapter(core), workspace=tmp_path, policy=deny_all) as d:
        turn = await d.prompt("go")
    decision = core.decisions["call-1"]
    assert isinstance(decision, Deny)
    assert decision.reason == "refused"
    assert "refused" in decision.message
    assert not decision.stops_turn
    assert turn.stop_reason == "end_turn"


async def test_an_allow_with_an_edited_input_passes_the_edit_to_the_core(tmp_path: Path) -> None:
    core = FunctionCore(asking("call-1"))
    edit = json.dumps({"command": "echo edited"})
    async with drive(adapter(core), workspace=tmp_path, policy=lambda _: Reply.allow(edit)) as d:
        await d.prompt("go")
    assert core.decisions["call-1"] == Allow(updated_input={"command": "echo edited"})


@pytest.mark.parametrize("value", ["not json", "[1, 2]", '"a string"'])
async def test_an_allow_whose_edited_input_is_not_a_json_object_is_denied_as_malformed(
    tmp_path: Path, value: str
) -> None:
    core = FunctionCore(asking("call-1"))
    async with drive(adapter(core), workspace=tmp_path, policy=lambda _: Reply.allow(value)) as d:
        await d.prompt("go")
    decision = core.decisions["call-1"]
    assert isinstance(decision, Deny)
    assert decision.reason == "malformed"


async def test_an_unanswered_request_is_denied_at_the_adapters_deadline_and_says_timed_out(
    tmp_path: Path,
) -> None:
    core = FunctionCore(asking("call-1"))
    async with drive(adapter(core, timeout_ms=50), workspace=tmp_path, policy=never_answer) as d:
        turn = await d.prompt("go")
    decision = core.decisions["call-1"]
    assert isinstance(decision, Deny)
    assert decision.reason == "timeout"
    assert "timed out" in decision.message
    assert "did not refuse" in decision.message
    assert turn.stop_reason == "end_turn"


async def test_the_masters_timeout_frame_denies_as_timed_out(tmp_path: Path) -> None:
    core = FunctionCore(asking("call-1"))
    policy = lambda _: Reply(timeout=True)  # noqa: E731
    async with drive(adapter(core), workspace=tmp_path, policy=policy) as d:
        await d.prompt("go")
    decision = core.decisions["call-1"]
    assert isinstance(decision, Deny)
    assert decision.reason == "timeout"


async def test_an_answer_after_the_timeout_is_ignored_and_reported(tmp_path: Path) -> None:
    core = FunctionCore(asking("call-1"))
    async with drive(adapter(core, timeout_ms=50), workspace=tmp_path, policy=never_answer) as d:
        turn = await d.prompt("go")
        (request,) = turn.of_type("agent.interaction.request")
        mark = len(d.frames)
        await d.send(d.control.allow(request.payload.interaction_id))
        error = await d.wait_for(SessionErrorFrame, after=mark)
        assert error.payload.error_code == "UNKNOWN_INTERACTION"
        assert "timeout" in error.payload.message
    decision = core.decisions["call-1"]
    assert isinstance(decision, Deny)
    assert decision.reason == "timeout"


async def test_a_malformed_answer_is_denied(tmp_path: Path) -> None:
    core = FunctionCore(asking("call-1"))
    async with drive(adapter(core), workspace=tmp_path, policy=never_answer) as d:
        start = await d.start_prompt("go")
        request = await d.wait_for(InteractionRequestFrame)
        bad = {
            "version": "rawp-dps-1.0",
            "type": "control.interaction.response",
            "session_id": d.session.session_id,
            "seq": 1,
            "timestamp": "2026-01-01T00:00:00.000Z",
            "payload": {"interaction_id": request.payload.interaction_id, "decision": "perhaps"},
        }
        await d.session.send_line(json.dumps(bad))
        await d.wait_turn(start.payload.turn_id)
        assert d.of_type("session.error")[0].payload.error_code == "INVALID_FRAME"
    decision = core.decisions["call-1"]
    assert isinstance(decision, Deny)
    assert decision.reason == "malformed"


async def test_two_parallel_requests_answered_in_reverse_order_each_get_their_own_answer(
    tmp_path: Path,
) -> None:
    core = FunctionCore(asking("first", "second"))
    async with drive(adapter(core), workspace=tmp_path, policy=never_answer) as d:
        start = await d.start_prompt("go")
        await d.wait_for(
            InteractionRequestFrame, where=lambda f: f.payload.context.tool_call_id == "first"
        )
        await d.wait_for(
            InteractionRequestFrame, where=lambda f: f.payload.context.tool_call_id == "second"
        )
        by_call = {
            f.payload.context.tool_call_id: f.payload.interaction_id
            for f in d.of_type("agent.interaction.request")
        }
        await d.send(d.control.allow(by_call["second"]))
        await d.send(d.control.deny(by_call["first"]))
        turn = await d.wait_turn(start.payload.turn_id)
    assert core.decisions["second"] == Allow()
    first = core.decisions["first"]
    assert isinstance(first, Deny)
    assert first.reason == "refused"
    assert len(turn.of_type("agent.interaction.request")) == 2


async def test_aborting_the_turn_denies_a_waiting_request_at_once_and_stops_the_core(
    tmp_path: Path,
) -> None:
    core = FunctionCore(asking("call-1"))
    async with drive(adapter(core), workspace=tmp_path, policy=never_answer) as d:
        start = await d.start_prompt("go")
        request = await d.wait_for(InteractionRequestFrame)
        await d.send(d.control.abort(start.payload.turn_id))
        await d.send(d.control.allow(request.payload.interaction_id))
        turn = await d.wait_turn(start.payload.turn_id)
    decision = core.decisions["call-1"]
    assert isinstance(decision, Deny)
    assert decision.reason == "aborted"
    assert decision.stops_turn
    assert turn.stop_reason == "cancelled"
    assert core.cancelled.is_set()
    late = [f for f in d.of_type("session.error") if f.payload.error_code == "UNKNOWN_INTERACTION"]
    assert len(late) == 1


async def test_closing_the_session_denies_every_waiting_request(tmp_path: Path) -> None:
    core = FunctionCore(asking("first", "second"))
    async with drive(adapter(core), workspace=tmp_path, policy=never_answer) as d:
        start = await d.start_prompt("go")
        await d.wait_for(
            InteractionRequestFrame, where=lambda f: f.payload.context.tool_call_id == "second"
        )
        await d.wait_for(
            InteractionRequestFrame, where=lambda f: f.payload.context.tool_call_id == "first"
        )
        closed = await d.end()
        turn = await d.wait_turn(start.payload.turn_id)
    assert closed.payload.reason == "explicit"
    assert turn.stop_reason == "cancelled"
    for call_id in ("first", "second"):
        decision = core.decisions[call_id]
        assert isinstance(decision, Deny)
        assert decision.reason == "closed"
    assert core.closed


async def test_a_second_prompt_during_a_turn_is_rejected_and_never_reaches_the_core(
    tmp_path: Path,
) -> None:
    core = FunctionCore(stall("working"))
    async with drive(adapter(core), workspace=tmp_path) as d:
        start = await d.start_prompt("first")
        mark = len(d.frames)
        await d.send(d.control.prompt("second"))
        error = await d.wait_for(SessionErrorFrame, after=mark)
        assert error.payload.error_code == "PROMPT_IN_PROGRESS"
        await d.send(d.control.abort(start.payload.turn_id))
        turn = await d.wait_turn(start.payload.turn_id)
    assert core.prompts == ["first"]
    assert turn.stop_reason == "cancelled"
    assert len(d.of_type("session.turn.start")) == len(d.of_type("session.turn.end")) == 1


async def fail_mid_turn(prompt: str, run: CoreRun) -> AsyncIterator[CoreEvent]:
    yield TextChunk(0, "about to break")
    yield ToolStarted(call_id=f"call-{prompt}", tool_name="Bash", input={})
    raise RuntimeError("the core broke")


async def test_a_core_that_raises_mid_turn_gets_an_error_and_exactly_one_turn_end(
    tmp_path: Path,
) -> None:
    core = FunctionCore(fail_mid_turn)
    async with drive(adapter(core), workspace=tmp_path) as d:
        turn = await d.prompt("go")
        again = await d.prompt("again")
    assert turn.stop_reason == "error"
    (error,) = turn.of_type("agent.error")
    assert isinstance(error, AgentErrorFrame)
    assert "the core broke" in error.payload.message
    (result,) = turn.of_type("tool.invoke.result")
    assert result.payload.is_error
    assert again.stop_reason == "error"
    assert len(d.of_type("session.turn.end")) == 2


async def raise_core_error(prompt: str, run: CoreRun) -> AsyncIterator[CoreEvent]:
    yield TextChunk(0, "partial")
    yield ToolStarted(call_id="call-1", tool_name="Bash", input={})
    raise CoreError("the model API refused", code="PROTOCOL_ERROR", fatal=prompt == "fatal")


async def test_a_core_error_is_reported_with_its_code_after_the_turns_stream_is_completed(
    tmp_path: Path,
) -> None:
    core = FunctionCore(raise_core_error)
    async with drive(adapter(core), workspace=tmp_path) as d:
        turn = await d.prompt("go")
        assert not d.session.closed
    types = [f.type for f in turn.frames]
    assert types.index("agent.text.done") < types.index("agent.error")
    (result,) = turn.of_type("tool.invoke.result")
    assert result.payload.is_error
    (error,) = turn.of_type("agent.error")
    assert error.payload.error_code == "PROTOCOL_ERROR"
    assert error.payload.severity == "error"
    assert turn.stop_reason == "error"


async def test_a_fatal_core_error_ends_the_turn_then_closes_the_session(tmp_path: Path) -> None:
    core = FunctionCore(raise_core_error)
    async with drive(adapter(core), workspace=tmp_path) as d:
        turn = await d.prompt("fatal")
        closed = await d.closed()
    assert turn.stop_reason == "error"
    assert turn.of_type("agent.error")[0].payload.severity == "fatal"
    assert isinstance(closed, SessionClosedFrame)
    assert closed.payload.reason == "agent_exit"
    assert len(d.of_type("agent.error")) == 1
    assert core.closed


async def test_a_request_without_a_tool_name_is_denied_without_asking(tmp_path: Path) -> None:
    decisions: list[object] = []

    async def nameless(prompt: str, run: CoreRun) -> AsyncIterator[CoreEvent]:
        decisions.append(await run.permission(PermissionRequest(tool_name="", tool_input={})))
        yield Stopped()

    async with drive(adapter(FunctionCore(nameless)), workspace=tmp_path, policy=allow_all) as d:
        turn = await d.prompt("go")
    assert not turn.of_type("agent.interaction.request")
    (decision,) = decisions
    assert isinstance(decision, Deny)
    assert decision.reason == "failed"


async def test_a_core_that_ignores_cancel_is_still_ended_as_cancelled_after_the_grace(
    tmp_path: Path,
) -> None:
    async def stubborn(prompt: str, run: CoreRun) -> AsyncIterator[CoreEvent]:
        yield TextChunk(0, "not stopping")
        await anyio.sleep_forever()

    core = FunctionCore(stubborn)
    async with drive(
        adapter(core), workspace=tmp_path, options=SessionOptions(abort_grace=0.1)
    ) as d:
        start = await d.start_prompt("go")
        await d.wait_for("agent.text.delta")
        await d.send(d.control.abort(start.payload.turn_id))
        turn = await d.wait_turn(start.payload.turn_id)
    assert turn.stop_reason == "cancelled"
    assert core.cancelled.is_set()


async def test_text_without_a_done_is_completed_when_the_turn_ends(tmp_path: Path) -> None:
    async def deltas_only(prompt: str, run: CoreRun) -> AsyncIterator[CoreEvent]:
        yield TextChunk(0, "Hel")
        yield TextChunk(0, "lo")

    async with drive(adapter(FunctionCore(deltas_only)), workspace=tmp_path) as d:
        turn = await d.prompt("go")
    (done,) = turn.of_type("agent.text.done")
    assert done.payload.text == "Hello"
    assert turn.stop_reason == "end_turn"


async def test_a_plain_turn_streams_text_and_ends_normally(tmp_path: Path) -> None:
    async with drive(adapter(FunctionCore(say("Hel", "lo"))), workspace=tmp_path) as d:
        turn = await d.prompt("hi")
    assert turn.text == "Hello"
    assert turn.stop_reason == "end_turn"
