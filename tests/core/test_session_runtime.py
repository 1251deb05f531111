"""The session runtime keeps the protocol's rules whatever the adapter does."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from rawp_adapters import (
    AgentExit,
    AgentFailure,
    InteractionOutcome,
    Question,
    SessionClosedError,
    SessionContext,
    SessionOptions,
    StartFailed,
    Turn,
    TurnResult,
    open_session,
)
from rawp_adapters.frames import (
    AgentError,
    AgentErrorFrame,
    InteractionRequestFrame,
    InteractionResolvedFrame,
    SessionClosedFrame,
    SessionErrorFrame,
    StopReason,
    TextDelta,
    ToolInvokeRequest,
    ToolInvokeResult,
    ToolInvokeResultFrame,
    TurnEndFrame,
)
from rawp_adapters.testing import FunctionAdapter, Reply, allow_all, drive, never_answer, say, stall

pytestmark = pytest.mark.anyio

FAST = SessionOptions(abort_grace=0.3, close_timeout=2.0, start_timeout=2.0)


class Gate:
    """A script that blocks until released, so a test can act mid-turn."""

    def __init__(self) -> None:
        self.entered = anyio.Event()
        self.release = anyio.Event()

    async def __call__(self, turn: Turn, ctx: SessionContext) -> TurnResult:
        self.entered.set()
        await self.release.wait()
        return TurnResult()


async def test_capabilities_come_first_and_state_is_idle_when_ready(tmp_path: Path) -> None:
    async with drive(FunctionAdapter(), workspace=tmp_path) as d:
        await d.wait_for("agent.state.changed")
        assert d.frames[0].type == "session.capabilities"
        assert d.frames[0].seq == 1
        assert d.frames[1].payload.state == "idle"  # type: ignore[union-attr]


async def test_a_second_prompt_during_a_turn_is_rejected_and_not_passed_on(
    tmp_path: Path,
) -> None:
    gate = Gate()
    adapter = FunctionAdapter(gate)
    async with drive(adapter, workspace=tmp_path) as d:
        start = await d.start_prompt("first")
        await gate.entered.wait()
        mark = len(d.frames)
        await d.send(d.control.prompt("second"))
        error = await d.wait_for(SessionErrorFrame, after=mark)
        assert error.payload.error_code == "PROMPT_IN_PROGRESS"
        assert error.payload.fatal is False
        gate.release.set()
        turn = await d.wait_turn(start.payload.turn_id)
        assert turn.stop_reason == "end_turn"
    assert [t.text for t in adapter.prompts] == ["first"]
    assert len(d.of_type("session.turn.start")) == 1


async def test_an_adapter_that_raises_mid_turn_gets_an_error_then_exactly_one_turn_end(
    tmp_path: Path,
) -> None:
    async def explode(turn: Turn, ctx: SessionContext) -> TurnResult:
        await ctx.emit(TextDelta(turn_id=turn.turn_id, index=0, text="partial"))
        raise RuntimeError("boom")

    async with drive(FunctionAdapter(explode), workspace=tmp_path) as d:
        turn = await d.prompt("go")
        assert turn.stop_reason == "error"
        assert turn.text == "partial", "frames before the crash are not lost"
        types = [f.type for f in turn.frames]
        assert types.index("agent.error") < types.index("session.turn.end")
        (error,) = turn.of_type("agent.error")
        assert "boom" in error.payload.message
        d.session.adapter.function = say("Hello")  # type: ignore[attr-defined]
        assert (await d.prompt("again")).stop_reason == "end_turn", "the session goes on"
    assert len(d.of_type("session.turn.end")) == 2


async def test_an_agent_failure_is_reported_as_given_before_the_turn_end(tmp_path: Path) -> None:
    async def fail(turn: Turn, ctx: SessionContext) -> TurnResult:
        raise AgentFailure.of("provider said no", code="AGENT_ERROR")

    async with drive(FunctionAdapter(fail), workspace=tmp_path) as d:
        turn = await d.prompt("go")
        assert turn.stop_reason == "error"
        (error,) = turn.of_type("agent.error")
        assert error.payload.message == "provider said no"


async def test_a_turn_that_ignores_abort_is_ended_as_cancelled_after_the_grace(
    tmp_path: Path,
) -> None:
    adapter = FunctionAdapter(stall())  # ignores the abort request
    async with drive(adapter, workspace=tmp_path, options=FAST, timeout=5) as d:
        start = await d.start_prompt("hang")
        await d.send(d.control.abort(start.payload.turn_id))
        turn = await d.wait_turn(start.payload.turn_id)
        assert turn.stop_reason == "cancelled"
        assert adapter.aborted == [start.payload.turn_id]
    assert len(d.of_type("session.turn.end")) == 1


@pytest.mark.parametrize("adapter_says", ["cancelled", "end_turn", "error"])
async def test_a_turn_that_winds_down_after_an_abort_ends_cancelled(
    tmp_path: Path, adapter_says: StopReason
) -> None:
    adapter = FunctionAdapter()

    async def until_aborted(turn: Turn, ctx: SessionContext) -> TurnResult:
        await adapter.abort_event.wait()
        return TurnResult(stop_reason=adapter_says)

    adapter.function = until_aborted
    async with drive(adapter, workspace=tmp_path) as d:
        start = await d.start_prompt("long")
        await d.send(d.control.abort())
        assert (await d.wait_turn(start.payload.turn_id)).stop_reason == "cancelled"


async def test_ending_the_session_mid_turn_ends_the_turn_before_session_closed(
    tmp_path: Path,
) -> None:
    gate = Gate()
    adapter = FunctionAdapter(gate)
    async with drive(adapter, workspace=tmp_path, options=FAST) as d:
        start = await d.start_prompt("long")
        await gate.entered.wait()
        closed = await d.end()
        assert closed.payload.reason == "explicit"
        types = [f.type for f in d.frames]
        assert types.index("session.turn.end") < types.index("session.closed")
        end = d.of_type("session.turn.end")[0]
        assert end.payload.turn_id == start.payload.turn_id
        assert end.payload.stop_reason == "cancelled"
    assert adapter.closed
    assert d.frames[-1].type == "session.closed"


async def test_an_agent_that_dies_mid_turn_gives_error_turn_end_and_closed_in_order(
    tmp_path: Path,
) -> None:
    gate = Gate()
    adapter = FunctionAdapter(gate)
    async with drive(adapter, workspace=tmp_path) as d:
        await d.start_prompt("long")
        await gate.entered.wait()
        assert adapter.ctx is not None
        adapter.ctx.agent_exited(
            AgentExit(
                exit_code=-9,
                signal="SIGKILL",
                error=AgentError(severity="fatal", error_code="SIGNAL_EXIT", message="SIGKILL"),
            )
        )
        closed = await d.closed()
        assert closed.payload.reason == "agent_exit"
        assert closed.payload.signal == "SIGKILL"
        tail = [f.type for f in d.frames if f.type != "agent.state.changed"][-3:]
        assert tail == ["agent.error", "session.turn.end", "session.closed"]
        assert d.of_type("session.turn.end")[0].payload.stop_reason == "error"


async def test_an_agent_that_dies_while_idle_still_reports_the_error_and_closes(
    tmp_path: Path,
) -> None:
    adapter = FunctionAdapter()
    async with drive(adapter, workspace=tmp_path) as d:
        await d.wait_for("agent.state.changed")
        assert adapter.ctx is not None
        adapter.ctx.agent_exited(
            AgentExit(
                exit_code=3,
                error=AgentError(severity="fatal", error_code="PROCESS_EXIT", message="exit 3"),
            )
        )
        closed = await d.closed()
        assert closed.payload.exit_code == 3
        assert d.of_type("agent.error")[0].payload.error_code == "PROCESS_EXIT"
        assert not d.of_type("session.turn.end")


async def test_an_agent_that_cannot_start_reports_capabilities_error_and_closed(
    tmp_path: Path,
) -> None:
    adapter = FunctionAdapter(start_error=StartFailed.of("no such binary: xcsh"))
    async with drive(adapter, workspace=tmp_path) as d:
        closed = await d.closed()
        assert closed.payload.reason == "error"
        types = [f.type for f in d.frames if f.type != "agent.state.changed"]
        assert types == ["session.capabilities", "agent.error", "session.closed"]
        error = d.of_type("agent.error")[0]
        assert error.payload.error_code == "SPAWN_FAILED"
        assert error.payload.severity == "fatal"
    assert adapter.closed, "cleanup runs even after a failed start"


class Asker:
    """A script that asks one interaction and records the outcome."""

    def __init__(self, timeout_ms: int | None = None, count: int = 1) -> None:
        self.timeout_ms = timeout_ms
        self.count = count
        self.outcomes: list[InteractionOutcome] = []
        self.by_n: dict[int, InteractionOutcome] = {}

    async def __call__(self, turn: Turn, ctx: SessionContext) -> TurnResult:
        async def ask(n: int) -> None:
            outcome = await ctx.interact(
                Question.permission(
                    "bash", tool_input={"n": n}, turn_id=turn.turn_id, timeout_ms=self.timeout_ms
                )
            )
            self.outcomes.append(outcome)
            self.by_n[n] = outcome

        async with anyio.create_task_group() as tg:
            for n in range(self.count):
                tg.start_soon(ask, n)
        return TurnResult()


async def test_an_interaction_nobody_answers_is_denied_at_its_deadline(tmp_path: Path) -> None:
    asker = Asker(timeout_ms=50)
    async with drive(FunctionAdapter(asker), workspace=tmp_path, policy=never_answer) as d:
        turn = await d.prompt("ask")
        request = turn.of_type("agent.interaction.request")[0]
        assert request.payload.timeout_ms == 50
        assert request.payload.context.tool_name == "bash"
    assert asker.outcomes == [InteractionOutcome(decision="deny", reason="timeout")]


async def test_a_master_timeout_frame_denies_the_interaction(tmp_path: Path) -> None:
    asker = Asker()
    policy = lambda _request: Reply(timeout=True)  # noqa: E731
    async with drive(FunctionAdapter(asker), workspace=tmp_path, policy=policy) as d:
        await d.prompt("ask")
    assert asker.outcomes == [InteractionOutcome(decision="deny", reason="timeout")]


async def test_an_explicit_allow_allows(tmp_path: Path) -> None:
    asker = Asker()
    async with drive(FunctionAdapter(asker), workspace=tmp_path, policy=allow_all) as d:
        await d.prompt("ask")
    assert [o.allowed for o in asker.outcomes] == [True]


async def test_a_late_answer_is_ignored_and_reported_as_unknown(tmp_path: Path) -> None:
    asker = Asker(timeout_ms=20)
    async with drive(FunctionAdapter(asker), workspace=tmp_path, policy=never_answer) as d:
        turn = await d.prompt("ask")
        request = turn.of_type("agent.interaction.request")[0]
        mark = len(d.frames)
        await d.send(d.control.allow(request.payload.interaction_id))
        error = await d.wait_for(SessionErrorFrame, after=mark)
        assert error.payload.error_code == "UNKNOWN_INTERACTION"
        assert error.payload.fatal is False
        assert "already resolved" in error.payload.message
    assert [o.reason for o in asker.outcomes] == ["timeout"]


async def test_an_answer_to_an_interaction_that_never_existed_is_reported(tmp_path: Path) -> None:
    async with drive(FunctionAdapter(), workspace=tmp_path) as d:
        await d.send(d.control.allow("no-such-interaction"))
        error = await d.wait_for(SessionErrorFrame)
        assert error.payload.error_code == "UNKNOWN_INTERACTION"


async def test_a_malformed_answer_denies_the_interaction_and_is_reported(tmp_path: Path) -> None:
    asker = Asker()
    async with drive(FunctionAdapter(asker), workspace=tmp_path, policy=never_answer) as d:
        start = await d.start_prompt("ask")
        request = await d.wait_for(InteractionRequestFrame)
        line = d.control.allow(request.payload.interaction_id).model_dump_json()
        await d.session.send_line(line.replace('"allow"', '"maybe"'))
        error = await d.wait_for(SessionErrorFrame)
        assert error.payload.error_code == "INVALID_FRAME"
        await d.wait_turn(start.payload.turn_id)
    assert asker.outcomes == [InteractionOutcome(decision="deny", reason="malformed")]


async def test_parallel_interactions_answered_in_reverse_order_each_get_their_answer(
    tmp_path: Path,
) -> None:
    asker = Asker(count=2)
    async with drive(FunctionAdapter(asker), workspace=tmp_path, policy=never_answer) as d:
        start = await d.start_prompt("ask twice")
        first, second = await d.wait_count("agent.interaction.request", 2)
        await d.send(d.control.deny(second.payload.interaction_id))
        await d.send(d.control.allow(first.payload.interaction_id))
        await d.wait_turn(start.payload.turn_id)
    allowed: int = first.payload.context.tool_input["n"]
    denied: int = second.payload.context.tool_input["n"]
    assert asker.by_n[allowed] == InteractionOutcome(decision="allow", reason="answered")
    assert asker.by_n[denied] == InteractionOutcome(decision="deny", reason="answered")


class Staged:
    """A script that asks one question per deadline in ``timeouts_ms``, each once the test
    lets it (``ask[n].set()``), and records each outcome and how long it waited."""

    def __init__(self, *timeouts_ms: int) -> None:
        self.timeouts_ms = timeouts_ms
        self.ask = [anyio.Event() for _ in timeouts_ms]
        self.give_up = [anyio.CancelScope() for _ in timeouts_ms]
        self.outcomes: dict[int, InteractionOutcome] = {}
        self.waited: dict[int, float] = {}

    async def __call__(self, turn: Turn, ctx: SessionContext) -> TurnResult:
        async def ask(n: int) -> None:
            question = Question.permission(
                "bash", tool_input={"n": n}, turn_id=turn.turn_id, timeout_ms=self.timeouts_ms[n]
            )
            started = anyio.current_time()
            with self.give_up[n]:
                self.outcomes[n] = await ctx.interact(question)
            self.waited[n] = anyio.current_time() - started

        async with anyio.create_task_group() as tg:
            for n, go in enumerate(self.ask):
                await go.wait()
                tg.start_soon(ask, n)
        return TurnResult()


def asked(n: int) -> Callable[[InteractionRequestFrame], bool]:
    return lambda frame: frame.payload.context.tool_input == {"n": n}


def resolving(request: InteractionRequestFrame) -> Callable[[InteractionResolvedFrame], bool]:
    return lambda frame: frame.payload.interaction_id == request.payload.interaction_id


ALLOWED = InteractionOutcome(decision="allow", reason="answered")
TIMED_OUT = InteractionOutcome(decision="deny", reason="timeout")


async def test_a_question_that_times_out_is_denied_while_an_earlier_one_stays_open(
    tmp_path: Path,
) -> None:
    staged = Staged(60_000, 50)
    async with drive(FunctionAdapter(staged), workspace=tmp_path, policy=never_answer) as d:
        start = await d.start_prompt("ask twice")
        staged.ask[0].set()
        first = await d.wait_for(InteractionRequestFrame, where=asked(0))
        staged.ask[1].set()
        second = await d.wait_for(InteractionRequestFrame, where=asked(1))
        resolved = await d.wait_for(InteractionResolvedFrame, where=resolving(second))
        assert (resolved.payload.outcome, resolved.payload.decided_by) == ("timed_out", "deadline")
        assert not [f for f in d.of_type(InteractionResolvedFrame) if resolving(first)(f)]
        await d.send(d.control.allow(first.payload.interaction_id))
        await d.wait_turn(start.payload.turn_id)
    assert staged.outcomes == {0: ALLOWED, 1: TIMED_OUT}


async def test_a_question_asked_after_an_answered_one_is_denied_at_its_own_deadline_not_before(
    tmp_path: Path,
) -> None:
    staged = Staged(50, 300)
    async with drive(FunctionAdapter(staged), workspace=tmp_path, policy=never_answer) as d:
        start = await d.start_prompt("ask twice")
        staged.ask[0].set()
        first = await d.wait_for(InteractionRequestFrame, where=asked(0))
        await d.send(d.control.allow(first.payload.interaction_id))
        await d.wait_for(InteractionResolvedFrame, where=resolving(first))
        staged.ask[1].set()
        await d.wait_turn(start.payload.turn_id)
    assert staged.outcomes[1] == TIMED_OUT
    assert staged.waited[1] >= 0.3 - 0.001


async def test_a_question_asked_after_every_earlier_one_timed_out_still_times_out(
    tmp_path: Path,
) -> None:
    staged = Staged(50, 50)
    async with drive(FunctionAdapter(staged), workspace=tmp_path, policy=never_answer) as d:
        start = await d.start_prompt("ask twice")
        staged.ask[0].set()
        first = await d.wait_for(InteractionRequestFrame, where=asked(0))
        await d.wait_for(InteractionResolvedFrame, where=resolving(first))
        staged.ask[1].set()
        await d.wait_turn(start.payload.turn_id)
    assert staged.outcomes == {0: TIMED_OUT, 1: TIMED_OUT}


async def test_a_question_its_asker_gave_up_on_is_resolved_once_even_after_its_deadline(
    tmp_path: Path,
) -> None:
    staged = Staged(50, 200)
    async with drive(FunctionAdapter(staged), workspace=tmp_path, policy=never_answer) as d:
        start = await d.start_prompt("ask twice")
        staged.ask[0].set()
        first = await d.wait_for(InteractionRequestFrame, where=asked(0))
        staged.give_up[0].cancel()
        await d.wait_for(InteractionResolvedFrame, where=resolving(first))
        staged.ask[1].set()  # its deadline comes after the first one's
        await d.wait_turn(start.payload.turn_id)
        (resolved,) = [f for f in d.of_type(InteractionResolvedFrame) if resolving(first)(f)]
    assert (resolved.payload.outcome, resolved.payload.decided_by) == ("cancelled", "agent")
    assert 0 not in staged.outcomes
    assert staged.outcomes[1] == TIMED_OUT


async def test_aborting_a_turn_denies_its_pending_interactions(tmp_path: Path) -> None:
    asker = Asker()
    async with drive(FunctionAdapter(asker), workspace=tmp_path, policy=never_answer) as d:
        start = await d.start_prompt("ask")
        await d.wait_for(InteractionRequestFrame)
        await d.send(d.control.abort())
        await d.wait_turn(start.payload.turn_id)
    assert asker.outcomes == [InteractionOutcome(decision="deny", reason="aborted")]


async def test_closing_the_session_denies_every_pending_interaction(tmp_path: Path) -> None:
    asker = Asker(count=3)
    async with drive(
        FunctionAdapter(asker), workspace=tmp_path, policy=never_answer, options=FAST
    ) as d:
        await d.start_prompt("ask")
        await d.wait_count("agent.interaction.request", 3)
        await d.end()
    assert [o.decision for o in asker.outcomes] == ["deny"] * 3
    assert {o.reason for o in asker.outcomes} <= {"closed", "aborted"}


async def test_compaction_and_mode_switch_are_answered_unsupported_when_the_agent_cannot(
    tmp_path: Path,
) -> None:
    async with drive(FunctionAdapter(), workspace=tmp_path) as d:
        await d.send(d.control.compact())
        await d.send(d.control.switch_mode("plan"))
        errors = await d.wait_count("session.error", 2)
        assert [e.payload.error_code for e in errors] == ["UNSUPPORTED", "UNSUPPORTED"]
        assert [e.payload.fatal for e in errors] == [False, False]


async def test_compaction_reaches_an_agent_that_supports_it(tmp_path: Path) -> None:
    async def compact(instructions: str | None, ctx: SessionContext) -> None:
        pass

    adapter = FunctionAdapter(compact=compact)
    async with drive(adapter, workspace=tmp_path) as d:
        await d.send(d.control.compact("keep the plan"))
        compacting = await d.wait_for(
            "agent.state.changed", where=lambda f: f.payload.state == "compacting"
        )
        await d.wait_for(
            "agent.state.changed",
            where=lambda f: f.payload.state == "idle",
            after=d.frames.index(compacting),
        )
    assert adapter.compactions == ["keep the plan"]


async def test_an_abort_with_no_turn_running_is_answered_no_active_turn(tmp_path: Path) -> None:
    async with drive(FunctionAdapter(), workspace=tmp_path) as d:
        await d.send(d.control.abort())
        error = await d.wait_for(SessionErrorFrame)
        assert error.payload.error_code == "NO_ACTIVE_TURN"


@pytest.mark.parametrize(
    "line",
    [
        "not json at all",
        '{"type": "control.prompt.request", "payload": {}}',
        "[]",
    ],
)
async def test_bad_control_lines_get_invalid_frame_and_the_session_goes_on(
    tmp_path: Path, line: str
) -> None:
    async with drive(FunctionAdapter(), workspace=tmp_path) as d:
        await d.session.send_line(line)
        error = await d.wait_for(SessionErrorFrame)
        assert error.payload.error_code == "INVALID_FRAME"
        assert error.payload.fatal is False
        assert (await d.prompt("still there?")).stop_reason == "end_turn"


async def test_a_client_frame_sent_to_the_session_is_rejected(tmp_path: Path) -> None:
    async with drive(FunctionAdapter(), workspace=tmp_path) as d:
        caps = await d.wait_for("session.capabilities")
        await d.session.send_line(caps.model_dump_json())
        error = await d.wait_for(SessionErrorFrame)
        assert "Client to Master" in error.payload.message


async def test_a_control_frame_for_another_session_is_rejected(tmp_path: Path) -> None:
    adapter = FunctionAdapter()
    async with drive(adapter, workspace=tmp_path) as d:
        frame = d.control.prompt("hi").model_copy(update={"session_id": "someone-else"})
        await d.send(frame)
        error = await d.wait_for(SessionErrorFrame)
        assert error.payload.error_code == "INVALID_FRAME"
    assert adapter.prompts == []


async def test_an_unknown_control_type_is_skipped_quietly(tmp_path: Path) -> None:
    async with drive(FunctionAdapter(), workspace=tmp_path) as d:
        frame = d.control.end().model_dump()
        frame.update(type="control.future.thing", payload={"x": 1})
        await d.session.send_line(json.dumps(frame))
        assert (await d.prompt("hi")).stop_reason == "end_turn"
        assert not d.of_type("session.error")


async def test_sending_to_a_closed_session_raises(tmp_path: Path) -> None:
    async with open_session(FunctionAdapter(), workspace=tmp_path) as session:
        await session.close()
        with pytest.raises(SessionClosedError):
            await session.send(session.control.prompt("too late"))


async def test_frames_of_a_finished_turn_are_dropped(tmp_path: Path) -> None:
    adapter = FunctionAdapter()
    async with drive(adapter, workspace=tmp_path) as d:
        turn = await d.prompt("hi")
        assert adapter.ctx is not None
        await adapter.ctx.emit(TextDelta(turn_id=turn.turn_id, index=0, text="stale"))
        assert (await d.prompt("again")).text == "Hello"
    assert "stale" not in "".join(f.payload.text for f in d.frames if f.type == "agent.text.delta")


async def test_a_tool_call_still_running_when_its_turn_ends_gets_an_error_result_first(
    tmp_path: Path,
) -> None:
    async def crash_mid_tool(turn: Turn, ctx: SessionContext) -> TurnResult:
        for call in ("c1", "c2"):
            await ctx.emit(
                ToolInvokeRequest(
                    invocation_id=call, tool_name="bash", input={}, turn_id=turn.turn_id
                )
            )
        await ctx.emit(
            ToolInvokeResult(invocation_id="c1", output_type="text", turn_id=turn.turn_id)
        )
        raise RuntimeError("died while c2 ran")

    async with drive(FunctionAdapter(crash_mid_tool), workspace=tmp_path) as d:
        turn = await d.prompt("run tools")
    types = [f.type for f in turn.frames if f.type != "agent.state.changed"]
    assert types[-4:] == ["tool.invoke.result", "session.usage", "agent.error", "session.turn.end"]
    results = turn.of_type(ToolInvokeResultFrame)
    assert [r.payload.invocation_id for r in results] == ["c1", "c2"]
    assert results[1].payload.is_error
    assert "ended before" in results[1].payload.output


async def test_a_slow_host_loses_nothing_and_seq_stays_contiguous(tmp_path: Path) -> None:
    count = 500

    async def flood(turn: Turn, ctx: SessionContext) -> TurnResult:
        for n in range(count):
            await ctx.emit(TextDelta(turn_id=turn.turn_id, index=0, text=f"{n},"))
        return TurnResult()

    options = SessionOptions(frame_buffer=8)
    async with open_session(FunctionAdapter(flood), workspace=tmp_path, options=options) as s:
        await s.send(s.control.prompt("flood"))
        received = []
        async for frame in s:
            received.append(frame)
            if frame.type == "agent.text.delta" and len(received) % 50 == 0:
                await anyio.lowlevel.checkpoint()
            if isinstance(frame, TurnEndFrame):
                await s.send(s.control.end())
            if isinstance(frame, SessionClosedFrame):
                break
    assert [f.seq for f in received] == list(range(1, len(received) + 1))
    text = "".join(f.payload.text for f in received if f.type == "agent.text.delta")
    assert text == "".join(f"{n}," for n in range(count))
    assert not [f for f in received if isinstance(f, AgentErrorFrame)]


async def test_the_workspace_must_be_an_existing_absolute_directory(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="absolute directory"):
        async with open_session(FunctionAdapter(), workspace="relative/dir"):
            pass
    with pytest.raises(ValueError, match="absolute directory"):
        async with open_session(FunctionAdapter(), workspace=tmp_path / "missing"):
            pass


async def test_the_sessions_tasks_are_named_after_what_they_run(tmp_path: Path) -> None:
    gate = Gate()
    async with drive(FunctionAdapter(gate), workspace=tmp_path) as d:
        start = await d.start_prompt("go")
        await gate.entered.wait()
        names = {task.name for task in anyio.get_running_tasks()}
        gate.release.set()
        await d.wait_turn(start.payload.turn_id)
    assert any((name or "").endswith("Session._run_turn") for name in names), names
