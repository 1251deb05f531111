"""Properties of the pure protocol state, driven without an event loop: whatever the
Master sends, whatever the adapter emits, and however its work ends (returns, fails,
is cancelled, hangs past the grace, the agent dies), the stream keeps every DPS rule,
every question is settled exactly once, and only an explicit allow allows."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from hypothesis import given, settings
from hypothesis import strategies as st

from rawp_adapters import AgentExit, CloseResult, InteractionOutcome, Question, TurnResult
from rawp_adapters._control import ControlFrames
from rawp_adapters._logging import get_logger
from rawp_adapters._protocol import (
    AbortTurn,
    BeginClose,
    Effect,
    Limits,
    RunCompact,
    RunConfiguration,
    RunTurn,
    SessionProtocol,
    SettleInteraction,
    TurnClosed,
)
from rawp_adapters.frames import (
    AgentError,
    ClientFrame,
    ClientPayload,
    Features,
    InteractionRequest,
    InteractionResolvedFrame,
    SessionCapabilities,
    SessionClosed,
    SessionError,
    SessionUsage,
    SessionUsageFrame,
    TextDelta,
    TextDone,
    ThinkingDelta,
    ToolInvokeRequest,
    ToolInvokeResult,
    ToolInvokeStream,
    TurnEnd,
    TurnEndFrame,
    TurnStart,
)
from rawp_adapters.testing import check_frames

SID = "6f1c2a8e-9d0b-4a43-9a57-2f0e1c6b1d11"
FEATURES = Features(adapter_type="pure", context_compaction=True, plan_mode=True, abort=True)

TURN_BOUND = frozenset({"ask", "text", "text_done", "thinking", "tool", "usage", "turn_ends"})
"""Actions that need a running turn: the harness prompts first when none runs."""
ENDING = st.one_of(st.tuples(st.just("end")), st.tuples(st.just("agent_exit"), st.booleans()))
"""Actions that end the session, kept rare so that most runs get far."""

ACTIONS = st.one_of(
    st.tuples(st.just("prompt")),
    st.tuples(st.just("abort")),
    st.tuples(st.just("bad_line")),
    st.tuples(st.just("compact")),
    st.tuples(st.just("compaction_done")),
    st.tuples(st.just("switch_mode")),
    st.tuples(st.just("ask"), st.sampled_from(["PERMISSION", "CONFIRM", "SELECT", "INPUT"])),
    st.tuples(
        st.just("answer"),
        st.integers(0, 5),
        st.sampled_from(["allow", "deny", "none", "value", "bad_value"]),
    ),
    st.tuples(st.just("master_timeout"), st.integers(0, 5)),
    st.tuples(st.just("deadline"), st.integers(0, 5)),
    st.tuples(st.just("abandon"), st.integers(0, 5)),
    st.tuples(st.just("text"), st.integers(0, 2), st.booleans()),
    st.tuples(st.just("text_done"), st.integers(0, 2)),
    st.tuples(st.just("thinking"), st.integers(0, 2)),
    st.tuples(st.just("tool"), st.integers(0, 2), st.sampled_from(["start", "out", "end"])),
    st.tuples(st.just("usage"), st.integers(0, 100)),
    st.tuples(st.just("stale_text")),
    st.tuples(
        st.just("turn_ends"),
        st.sampled_from(["end_turn", "max_tokens", "error", "raise", "cancelled"]),
    ),
    st.tuples(st.just("grace_over")),
    st.tuples(st.just("forge"), st.sampled_from(["start", "end", "closed", "caps", "error"])),
)
RUNS = st.lists(st.one_of(ACTIONS, ACTIONS, ACTIONS, ACTIONS, ENDING), min_size=4, max_size=50)


@dataclass
class Harness:
    """Plays the driver: carries out effects as Session does, with every wait decided
    by the test instead of a clock."""

    frames: list[ClientFrame] = field(default_factory=list)
    control: ControlFrames = field(default_factory=lambda: ControlFrames(SID))
    protocol: SessionProtocol = field(init=False)
    running: dict[str, Any] = field(default_factory=dict)
    asked: list[InteractionRequest] = field(default_factory=list)
    settled: dict[str, list[InteractionOutcome]] = field(default_factory=dict)
    allowed_by_master: set[str] = field(default_factory=set)
    closing: BeginClose | None = None
    stale_turn: str | None = None
    ids: int = 0

    def __post_init__(self) -> None:
        self.protocol = SessionProtocol(
            SID,
            sink=self.frames.append,
            log=get_logger("tests.protocol"),
            limits=Limits(max_open_interactions=4),
            new_id=self._new_id,
            clock=lambda: "2026-01-01T00:00:00.000Z",
        )

    def _new_id(self) -> str:
        self.ids += 1
        return f"id-{self.ids}"

    def carry_out(self, effects: list[Effect]) -> None:
        for effect in effects:
            match effect:
                case RunTurn(turn):
                    self.running[turn.turn_id] = turn
                case TurnClosed(turn_id):
                    self.running.pop(turn_id, None)
                    self.stale_turn = turn_id
                case SettleInteraction(interaction_id, outcome):
                    self.settled.setdefault(interaction_id, []).append(outcome)
                case BeginClose():
                    self.closing = self.closing or effect
                case AbortTurn() | RunCompact() | RunConfiguration():
                    pass

    def turn(self) -> str | None:
        return next(iter(self.running), None)

    def send(self, frame: Any) -> None:
        if not self.protocol.sealed and self.closing is None:
            self.carry_out(self.protocol.control(frame))

    def act(self, action: tuple[Any, ...]) -> None:
        protocol = self.protocol
        name = action[0]
        if name in TURN_BOUND and self.turn() is None:
            self.send(self.control.prompt("hi"))
        turn = self.turn()
        if name == "prompt":
            self.send(self.control.prompt("hi"))
        elif name == "abort":
            self.send(self.control.abort())
        elif name == "end":
            self.send(self.control.end())
        elif name == "bad_line":
            if not protocol.sealed and self.closing is None:
                self.carry_out(protocol.control_line(b'{"type": "control.prompt.request"'))
        elif name == "compact":
            self.send(self.control.compact())
        elif name == "compaction_done":
            if protocol.compacting:
                protocol.compaction_finished()
        elif name == "switch_mode":
            self.send(self.control.switch_mode("plan"))
        elif name == "ask":
            question = Question(
                action[1],
                turn_id=turn,
                options=("a", "b") if action[1] == "SELECT" else None,
                context=None,
            )
            if action[1] == "PERMISSION":
                question = Question.permission("bash", turn_id=turn)
            opened = protocol.open_interaction(question)
            if isinstance(opened, InteractionRequest):
                self.asked.append(opened)
        elif name in ("answer", "master_timeout", "deadline", "abandon"):
            if not self.asked:
                return
            request = self.asked[action[1] % len(self.asked)]
            iid = request.interaction_id
            if name == "answer":
                kind = action[2]
                frame = {
                    "allow": self.control.allow(iid),
                    "deny": self.control.deny(iid),
                    "none": self.control.respond(iid),
                    "value": self.control.respond(iid, value="a"),
                    "bad_value": self.control.respond(iid, value="zzz"),
                }[kind]
                explicit = kind == "allow" and request.interaction_type in (
                    "PERMISSION",
                    "CONFIRM",
                )
                explicit |= kind == "value" and request.interaction_type in ("SELECT", "INPUT")
                explicit |= kind == "bad_value" and request.interaction_type == "INPUT"
                if explicit and iid not in self.settled:
                    self.allowed_by_master.add(iid)
                self.send(frame)
            elif name == "master_timeout":
                self.send(self.control.timeout(iid))
            elif iid not in self.settled:  # the waiter is only there until it is settled
                method = (
                    protocol.interaction_deadline
                    if name == "deadline"
                    else protocol.interaction_abandoned
                )
                self.carry_out(method(iid))
        elif name == "text" and turn is not None:
            payload = (
                ThinkingDelta(turn_id=turn, index=action[1], text="t", redacted=action[2])
                if action[2]
                else TextDelta(turn_id=turn, index=action[1], text="x")
            )
            protocol.emit(payload)
        elif name == "text_done" and turn is not None:
            protocol.emit(TextDone(turn_id=turn, index=action[1], text="x"))
        elif name == "thinking" and turn is not None:
            protocol.emit(ThinkingDelta(turn_id=turn, index=action[1], text="hmm"))
        elif name == "tool" and turn is not None:
            call = f"call-{action[1]}"
            tool_event: ToolInvokeRequest | ToolInvokeStream | ToolInvokeResult
            if action[2] == "start":
                tool_event = ToolInvokeRequest(
                    invocation_id=call, tool_name="bash", input={}, turn_id=turn
                )
            elif action[2] == "out":
                tool_event = ToolInvokeStream(invocation_id=call, output="o", turn_id=turn)
            else:
                tool_event = ToolInvokeResult(
                    invocation_id=call, output_type="text", output="r", turn_id=turn
                )
            protocol.emit(tool_event)
        elif name == "usage" and turn is not None:
            protocol.emit(SessionUsage(turn_id=turn, input_tokens=action[1], output_tokens=1))
        elif name == "stale_text" and self.stale_turn is not None:
            protocol.emit(TextDelta(turn_id=self.stale_turn, index=0, text="late"))
        elif name == "turn_ends" and turn is not None:
            how = action[1]
            if how == "raise":
                error = AgentError(severity="error", error_code="AGENT_ERROR", message="boom")
                self.carry_out(protocol.turn_finished(turn, None, error))
            elif how == "cancelled":
                self.carry_out(protocol.turn_finished(turn, None, None))
            else:
                self.carry_out(protocol.turn_finished(turn, TurnResult(stop_reason=how), None))
        elif name == "forge":  # an adapter emitting frames only the runtime may say
            forged: dict[str, ClientPayload] = {
                "start": TurnStart(turn_id="forged"),
                "end": TurnEnd(turn_id=turn or "forged", stop_reason="end_turn"),
                "closed": SessionClosed(reason="explicit"),
                "caps": SessionCapabilities(adapter_type="pure", features=FEATURES),
                "error": SessionError(error_code="INVALID_FRAME", message="x", fatal=False),
            }
            protocol.emit(forged[action[1]])
        elif name == "grace_over" and turn is not None:
            self.carry_out(protocol.force_turn_end(turn, None, "cancelled"))
        elif name == "agent_exit":
            error = AgentError(severity="fatal", error_code="PROCESS_EXIT", message="gone")
            self.carry_out(protocol.agent_exited(AgentExit(1, None, error if action[1] else None)))
        self.run_close()

    def run_close(self, effect: BeginClose | None = None) -> None:
        """A close runs to its end: the abort grace passes, the adapter closes."""
        effect = effect or self.closing
        if effect is None or self.protocol.sealed:
            return
        for follow_up in self.protocol.begin_close(effect.agent_exit):
            if isinstance(follow_up, AbortTurn):
                self.carry_out(
                    self.protocol.force_turn_end(follow_up.turn.turn_id, None, "cancelled")
                )
            else:
                self.carry_out([follow_up])
        self.protocol.finish_close(effect.reason, CloseResult(), effect.agent_exit)


@settings(max_examples=400, deadline=None)
@given(RUNS)
def test_any_interleaving_keeps_every_rule_and_settles_every_question_once(
    actions: list[tuple[Any, ...]],
) -> None:
    harness = Harness()
    harness.carry_out(harness.protocol.started(FEATURES, None, None))
    for action in actions:
        harness.act(action)
    harness.run_close(BeginClose("explicit"))

    frames = harness.frames
    assert check_frames(frames) == [], [str(v) for v in check_frames(frames)]
    assert frames[-1].type == "session.closed"
    for request in harness.asked:
        outcomes = harness.settled.get(request.interaction_id, [])
        assert len(outcomes) == 1, f"{request.interaction_id} settled {len(outcomes)} times"
        if outcomes[0].allowed:
            assert request.interaction_id in harness.allowed_by_master
    resolved = [f for f in frames if isinstance(f, InteractionResolvedFrame)]
    assert sorted(f.payload.interaction_id for f in resolved) == sorted(
        r.interaction_id for r in harness.asked
    )
    turns = [f for f in frames if isinstance(f, TurnEndFrame)]
    usage = [f for f in frames if isinstance(f, SessionUsageFrame)]
    assert sorted(f.payload.turn_id for f in usage) == sorted(t.payload.turn_id for t in turns), (
        "exactly one session.usage per turn"
    )
    for frame in usage:
        end = next(t for t in turns if t.payload.turn_id == frame.payload.turn_id)
        assert end.seq > frame.seq
        reported = end.payload.usage.input_tokens if end.payload.usage is not None else None
        assert reported == frame.payload.input_tokens


@settings(max_examples=200, deadline=None)
@given(st.lists(ACTIONS, max_size=30), st.sampled_from(["raise", "end_turn", "error"]))
def test_after_an_abort_a_turn_ends_cancelled_however_it_winds_down(
    actions: list[tuple[Any, ...]], how: Literal["raise", "end_turn", "error"]
) -> None:
    harness = Harness()
    harness.carry_out(harness.protocol.started(FEATURES, None, None))
    harness.send(harness.control.prompt("hi"))
    turn = harness.turn()
    assert turn is not None
    for action in actions:
        if action[0] in ("text", "tool", "usage", "ask", "answer", "thinking", "text_done"):
            harness.act(action)
    harness.send(harness.control.abort())
    if how == "raise":
        error = AgentError(severity="error", error_code="AGENT_ERROR", message="aborted")
        harness.carry_out(harness.protocol.turn_finished(turn, None, error))
    else:
        harness.carry_out(harness.protocol.turn_finished(turn, TurnResult(stop_reason=how), None))
    ends = [f for f in harness.frames if isinstance(f, TurnEndFrame)]
    assert [e.payload.stop_reason for e in ends] == ["cancelled"]
    assert not any(f.type == "agent.error" for f in harness.frames)
