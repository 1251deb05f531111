"""The session's protocol state, with no I/O and no clock of its own.

Control frames, adapter payloads and the outcomes of the work it asked for go in;
numbered frames (to ``sink``) and effects (what the driver must now do) come out.
Every rule of RAWP-DPS that does not depend on how an agent is reached lives here,
once: ``seq``, capabilities first, one prompt in flight, turn-id fencing, exactly
one turn end per turn start, open text/thinking blocks and tool calls closed at
turn end, duplicate and orphan tool events dropped, one ``session.usage`` per
turn, abort ⇒ ``cancelled``, the questions to the Master (:mod:`._interactions`)
and host tool calls (:mod:`._host_calls`) settled once each, and ``session.closed``
last. :class:`rawp_adapters.Session` is the anyio driver around it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final, get_args

from rawp_adapters._adapter import (
    AgentExit,
    CloseResult,
    HostToolCall,
    HostToolOutcome,
    InteractionOutcome,
    ModelState,
    Question,
    Turn,
    TurnResult,
)
from rawp_adapters._codec import (
    CLIENT_FRAME_TYPES,
    FRAME_CLASS_BY_PAYLOAD,
    check_version,
    decode_frame,
    utc_timestamp,
)
from rawp_adapters._errors import FrameError, SessionClosedError
from rawp_adapters._frames import (
    DPS_VERSION,
    AgentError,
    AgentErrorCode,
    AgentInfo,
    AgentState,
    AgentStateChanged,
    ClientFrame,
    ClientPayload,
    CloseReason,
    ControlFrame,
    Features,
    FrameMetadata,
    InteractionRequest,
    InteractionResolved,
    InteractionResponseFrame,
    InteractionTimeoutFrame,
    ModelChanged,
    ModelInfo,
    ModelList,
    ModelListRequest,
    ModelListRequestFrame,
    ModelSet,
    ModelSetFrame,
    ModeSwitch,
    ModeSwitchFrame,
    PlanEntry,
    PlanSet,
    PlanSetFrame,
    PlanUpdated,
    PromptAbortFrame,
    PromptRequestFrame,
    PromptSteer,
    PromptSteerFrame,
    SessionCapabilities,
    SessionClosed,
    SessionCompactFrame,
    SessionEndFrame,
    SessionError,
    SessionErrorCode,
    SessionUsage,
    StopReason,
    TextDelta,
    TextDeltaFrame,
    ToolCatalogPublish,
    ToolCatalogPublishFrame,
    ToolCatalogUpdated,
    ToolInvokeRequest,
    ToolInvokeResult,
    ToolInvokeStream,
    ToolResultFrame,
    ToolStreamFrame,
    TurnEnd,
    TurnStart,
    UnknownFrame,
)
from rawp_adapters._framing import OversizedLine
from rawp_adapters._protocol._effects import (
    AbortTurn,
    BeginClose,
    Configuration,
    Effect,
    Limits,
    RunCompact,
    RunConfiguration,
    RunSteer,
    RunTurn,
    TurnClosed,
)
from rawp_adapters._protocol._host_calls import HostCalls
from rawp_adapters._protocol._ids import new_uuid4
from rawp_adapters._protocol._interactions import Interactions
from rawp_adapters._protocol._turn import TurnState
from rawp_adapters._unchecked import construct_unchecked

if TYPE_CHECKING:
    from structlog.stdlib import BoundLogger

REMEMBERED_UNKNOWN_TYPES: Final = 64
"""Distinct unknown control frame types logged once each; later ones are not logged."""
RUNTIME_OWNED: Final[frozenset[type[ClientPayload]]] = frozenset(
    {
        SessionCapabilities,
        TurnStart,
        TurnEnd,
        SessionClosed,
        SessionError,
        InteractionRequest,
        InteractionResolved,
        AgentStateChanged,
    }
)
"""Payloads only the runtime emits; an adapter that emits one has it dropped."""
_TOOL_PAYLOADS: Final = frozenset({ToolInvokeRequest, ToolInvokeStream, ToolInvokeResult})
FORGED_FRAME: Final = (
    "the adapter emitted {frame_type}, which only the session runtime emits; dropped"
)
_STEP_METADATA: Final = FrameMetadata.model_validate({"usage_scope": "step"})
_FRAME_TYPES: Final[dict[type[Any], tuple[type[Any], str]]] = {
    payload_class: (frame_class, frame_class.model_fields["type"].default)
    for payload_class, frame_class in FRAME_CLASS_BY_PAYLOAD.items()
}
"""Each payload model's frame model and ``type``."""
_FRAME_FIELDS: Final = frozenset(
    ("version", "session_id", "seq", "timestamp", "payload", "metadata")
)
"""The envelope fields the session sets (pydantic's ``model_fields_set`` of its frames)."""
_FIELDS_SET: Final = set(_FRAME_FIELDS)
"""Copied into each frame (copying a set is cheaper than building one)."""
_FENCED: Final[frozenset[type[Any]]] = frozenset(
    payload_class
    for payload_class in _FRAME_TYPES
    if "turn_id" in payload_class.model_fields and payload_class not in (TurnStart, TurnEnd)
)
"""Payloads with a ``turn_id`` that fences them to their turn (turn start and end
aside): the types :meth:`SessionProtocol._put` checks, by exact type."""
_STATE_CHANGES: Final = {state: AgentStateChanged(state=state) for state in get_args(AgentState)}
"""One payload per state, shared by the frames (payloads are frozen): a state changes
twice per question, and validating a new payload each time shows in its round trip."""

# ------------------------------------------------------------------ state


class SessionProtocol:
    """One session's protocol state. Frames go to ``sink`` in ``seq`` order (those of
    one :meth:`emit_many` to ``sink_many`` together, when given); methods that can ask
    for work return the :data:`Effect` list the driver must carry out.

    ``backlogged`` tells whether the host is behind (its queue at the bound): then
    answers to bad input are counted rather than queued, and the host calls
    :meth:`put_unanswered_summary` once it has room.
    """

    def __init__(
        self,
        session_id: str,
        *,
        sink: Callable[[ClientFrame], object],
        sink_many: Callable[[list[ClientFrame]], object] | None = None,
        log: BoundLogger,
        limits: Limits | None = None,
        backlogged: Callable[[], bool] = lambda: False,
        new_id: Callable[[], str] = new_uuid4,
        clock: Callable[[], str] = utc_timestamp,
    ) -> None:
        self.session_id = session_id
        self.limits = limits or Limits()
        self._sink = sink
        self._sink_many = sink_many
        self._batch: list[ClientFrame] | None = None
        """The frames of the running :meth:`emit_many`, for ``sink_many``."""
        self._log = log
        self._backlogged = backlogged
        self._new_id = new_id
        self.on_prompt: Callable[[PromptRequestFrame], object] | None = None
        """Sees each prompt as it is handled, before its turn starts (telemetry)."""
        self._clock = clock
        self._batch_timestamp: str | None = None
        """The clock read once for the payloads of one :meth:`emit_many`."""
        self.seq = 0
        self.features: Features | None = None
        self.model: str | None = None
        """The agent's model as last stated (capabilities, then each change)."""
        self.ready = False
        self.closing = False
        self.sealed = False
        self.compacting = False
        self.turn: TurnState | None = None
        self._state: AgentState | None = None
        self._early: list[ClientPayload] = []
        self._early_dropped = 0
        self._exit_before_ready: AgentExit | None = None
        self._unanswered = 0
        self._unknown_types: set[str] = set()
        self._forged: set[str] = set()
        self.interactions = Interactions(
            put=self._put,
            complain=self.session_error,
            settled=self._interaction_settled,
            log=log,
            new_id=new_id,
            max_open=self.limits.max_open_interactions,
        )
        self.host_calls = HostCalls(self._put, log, max_open=self.limits.max_open_interactions)

    # ------------------------------------------------------------ queries

    @property
    def open_interactions(self) -> int:
        return len(self.interactions)

    def turn_running(self, turn_id: str) -> bool:
        turn = self.turn
        return turn is not None and turn.turn.turn_id == turn_id and not turn.ended

    # ------------------------------------------------------------ lifecycle

    def started(
        self, features: Features, agent: AgentInfo | None, failure: AgentError | None
    ) -> list[Effect]:
        """The adapter's start returned (or failed): capabilities first, then what it
        emitted while starting."""
        self.features = features
        self.model = agent.model if agent is not None else None
        self.ready = True
        self._put(
            SessionCapabilities(adapter_type=features.adapter_type, features=features, agent=agent)
        )
        early, self._early = self._early, []
        for payload in early:
            self._put(payload)
        if self._early_dropped:
            self._put(
                AgentError(
                    severity="warning",
                    error_code=AgentErrorCode.PROTOCOL_ERROR,
                    message=f"{self._early_dropped} frames the agent produced before it was "
                    f"ready were dropped (more than {self.limits.frame_buffer})",
                )
            )
        if failure is not None:
            return [BeginClose("error", AgentExit(error=failure))]
        if self._exit_before_ready is not None:
            return [BeginClose("agent_exit", self._exit_before_ready)]
        self._set_state("idle")
        return []

    def agent_exited(self, agent_exit: AgentExit) -> list[Effect]:
        if not self.ready:
            self._exit_before_ready = agent_exit
            return []
        if self.closing:
            return []
        return [BeginClose("agent_exit", agent_exit)]

    def begin_close(self, agent_exit: AgentExit | None) -> list[Effect]:
        """Start closing (once): deny every interaction; end the turn with the agent's
        error, or ask for it to be aborted. Then the driver closes the adapter and
        calls :meth:`finish_close`."""
        self.closing = True
        self._set_state("stopping")
        effects = self._settle_all()
        turn = self.turn
        if turn is not None:
            if agent_exit is not None:
                stop: StopReason = "error" if agent_exit.error is not None else "end_turn"
                effects += self.force_turn_end(turn.turn.turn_id, agent_exit.error, stop)
            else:
                turn.aborting = True
                effects.append(AbortTurn(turn.turn))
        elif agent_exit is not None and agent_exit.error is not None:
            self._put(agent_exit.error)
        return effects

    def finish_close(
        self, reason: CloseReason, result: CloseResult, agent_exit: AgentExit | None
    ) -> None:
        if agent_exit is not None:
            result = CloseResult(
                agent_exit.exit_code if agent_exit.exit_code is not None else result.exit_code,
                agent_exit.signal or result.signal,
            )
        self._set_state("stopped")
        self.put_unanswered_summary()
        self._put(SessionClosed(reason=reason, exit_code=result.exit_code, signal=result.signal))
        self.sealed = True

    # ------------------------------------------------------------ control frames

    def control_line(self, line: bytes | str | OversizedLine) -> list[Effect]:
        """One raw line from the Master; bad input is answered with ``session.error``."""
        if self.sealed:
            raise SessionClosedError(f"session {self.session_id} is closed")
        if isinstance(line, OversizedLine):
            self.session_error(
                SessionErrorCode.INVALID_FRAME,
                f"a line of {line.size} bytes is over the size limit; skipped",
            )
            return []
        try:
            frame = decode_frame(line)
        except FrameError as exc:
            return self._on_invalid_frame(exc)
        if frame.type in CLIENT_FRAME_TYPES:
            self.session_error(
                SessionErrorCode.INVALID_FRAME,
                f"{frame.type} goes from Client to Master; a session only takes control frames",
            )
            return []
        return self.control(frame)  # type: ignore[arg-type]

    def control(self, frame: ControlFrame | UnknownFrame) -> list[Effect]:
        """One control frame. Raises :class:`SessionClosedError` once closed."""
        if self.sealed:
            raise SessionClosedError(f"session {self.session_id} is closed")
        if self.closing:
            self.session_error(
                SessionErrorCode.SESSION_CLOSED, f"session is closing; {frame.type} ignored"
            )
            return []
        if frame.version != DPS_VERSION:
            try:
                check_version(frame.version)
            except FrameError as exc:
                return self._on_invalid_frame(exc)
        if frame.session_id != self.session_id:
            self.session_error(
                SessionErrorCode.INVALID_FRAME,
                f"{frame.type} names session {frame.session_id}, not this one; ignored",
            )
            return []
        match frame:
            case PromptRequestFrame():
                if self.on_prompt is not None:
                    self.on_prompt(frame)
                return self._on_prompt(frame)
            case PromptAbortFrame():
                return self._on_abort(frame.payload.turn_id)
            case InteractionResponseFrame():
                return self.interactions.answer(frame.payload)
            case InteractionTimeoutFrame():
                return self.interactions.settle(
                    frame.payload.interaction_id, "timeout", "master_timeout"
                )
            case SessionCompactFrame():
                return self._on_compact(frame.payload.custom_instructions)
            case ModeSwitchFrame():
                return self._configure(frame.payload, "plan_mode", "has no plan mode")
            case SessionEndFrame():
                # Deny now, not when the close task runs: an answer sent after the end
                # frame must not be applied.
                return [*self._settle_all(), BeginClose("explicit")]
            case ToolStreamFrame():
                effects = self.host_calls.progress(frame.payload, frame.metadata)
                return self._host_answer(effects, frame.payload.invocation_id)
            case ToolResultFrame():
                effects = self.host_calls.answer(frame.payload, frame.metadata)
                return self._host_answer(effects, frame.payload.invocation_id)
            case PromptSteerFrame():
                return self._on_steer(frame.payload)
            case ToolCatalogPublishFrame():
                return self._on_catalog(frame.payload)
            case ModelSetFrame():
                return self._on_model_set(frame.payload)
            case ModelListRequestFrame():
                return self._configure(frame.payload, "model_list", "cannot list its models")
            case PlanSetFrame():
                if self._busy("the plan is set between turns"):
                    return []
                return self._configure(frame.payload, "plan_seeding", "has no plan to seed")
            case UnknownFrame():
                self._on_unknown(frame)
        return []

    def _features(self) -> Features:
        assert self.features is not None, "control frames are taken once started"
        return self.features

    def _on_prompt(self, frame: PromptRequestFrame) -> list[Effect]:
        if self.turn is not None or self.compacting:
            busy = "a turn" if self.turn is not None else "a compaction"
            self.session_error(
                SessionErrorCode.PROMPT_IN_PROGRESS,
                f"{busy} is in progress; prompt {frame.payload.prompt_id} was not passed on",
            )
            return []
        if not self.ready:
            self.session_error(SessionErrorCode.PROMPT_IN_PROGRESS, "the agent is starting")
            return []
        turn = TurnState(Turn(turn_id=self._new_id(), request=frame.payload))
        self.turn = turn
        self._put(TurnStart(turn_id=turn.turn.turn_id, prompt_id=frame.payload.prompt_id))
        self._set_state("busy")
        return [RunTurn(turn.turn)]

    def _on_abort(self, turn_id: str | None) -> list[Effect]:
        turn = self.turn
        if turn is None or (turn_id is not None and turn_id != turn.turn.turn_id):
            detail = "no turn is running" if turn is None else f"turn {turn_id} is not running"
            self.session_error(SessionErrorCode.NO_ACTIVE_TURN, f"{detail}; abort ignored")
            return []
        if turn.aborting:
            return []
        # Deny now, not when the abort runs: an answer sent after the abort frame
        # must not be applied, nor a new interaction of this turn opened.
        turn.aborting = True
        turn_id = turn.turn.turn_id
        return [*self._settle_turn(turn_id), AbortTurn(turn.turn)]

    def _on_compact(self, custom_instructions: str | None) -> list[Effect]:
        if not self._features().context_compaction:
            self.session_error(
                SessionErrorCode.UNSUPPORTED, "this agent does not support context compaction"
            )
            return []
        if self.turn is not None or self.compacting:
            self.session_error(
                SessionErrorCode.PROMPT_IN_PROGRESS, "compaction waits until nothing is running"
            )
            return []
        self.compacting = True
        self._set_state("compacting")
        return [RunCompact(custom_instructions)]

    def compaction_finished(self) -> None:
        self.compacting = False
        if not self.closing:
            self._set_state("idle")

    # ------------------------------------------------------------ configuration

    def _configure(self, request: Configuration, feature: str, lacks: str) -> list[Effect]:
        if not getattr(self._features(), feature):
            self.session_error(SessionErrorCode.UNSUPPORTED, f"this agent {lacks}")
            return []
        return [RunConfiguration(request)]

    def _busy(self, rule: str) -> bool:
        """A turn or compaction runs: say so (``PROMPT_IN_PROGRESS``) and refuse."""
        if self.turn is None and not self.compacting:
            return False
        self.session_error(SessionErrorCode.PROMPT_IN_PROGRESS, f"{rule}; not passed on")
        return True

    def _on_catalog(self, request: ToolCatalogPublish) -> list[Effect]:
        problem = self.host_calls.catalog_problem(request.tools)
        if problem is not None:
            self.session_error(SessionErrorCode.INVALID_TOOL_CATALOG, f"{problem}; not published")
            return []
        return self._configure(request, "host_tools", "cannot call the Master's tools")

    def _on_model_set(self, request: ModelSet) -> list[Effect]:
        features = self._features()
        if request.model is not None and not features.model_change:
            self.session_error(SessionErrorCode.UNSUPPORTED, "this agent cannot change its model")
            return []
        if request.thinking_level is not None and not features.thinking_change:
            self.session_error(
                SessionErrorCode.UNSUPPORTED, "this agent cannot change its thinking level"
            )
            return []
        if self._busy("the model is changed between turns"):
            return []
        return [RunConfiguration(request)]

    def configured(self, request: Configuration, answer: object) -> None:
        """The adapter carried out ``request``; ``answer`` is what its method returned."""
        match request:
            case ToolCatalogPublish():
                names = self.host_calls.set_catalog(request.tools)
                self._put(ToolCatalogUpdated(tools=names))
            case ModelSet():
                assert isinstance(answer, ModelState)
                self.model = answer.model or self.model
                self._put(ModelChanged(model=answer.model, thinking_level=answer.thinking_level))
            case ModelListRequest():
                assert isinstance(answer, list)
                models = [model for model in answer if isinstance(model, ModelInfo)]
                self._put(ModelList(models=models, current=self.model))
            case PlanSet():
                assert isinstance(answer, list)
                entries = [entry for entry in answer if isinstance(entry, PlanEntry)]
                self._put(PlanUpdated(entries=entries))
            case ModeSwitch():
                pass

    # ------------------------------------------------------------ steering

    def _on_steer(self, message: PromptSteer) -> list[Effect]:
        features = self._features()
        if not (features.steering if message.delivery == "steer" else features.follow_up):
            what = "steering" if message.delivery == "steer" else "follow-up messages"
            self.session_error(SessionErrorCode.UNSUPPORTED, f"this agent does not take {what}")
            return []
        turn = self.turn
        if (
            turn is None
            or turn.aborting
            or (message.turn_id is not None and message.turn_id != turn.turn.turn_id)
        ):
            self.session_error(
                SessionErrorCode.NO_ACTIVE_TURN,
                f"no running turn to take message {message.prompt_id}; send a prompt instead",
            )
            return []
        return [RunSteer(turn.turn, message)]

    # ------------------------------------------------------------ host tool calls

    def distinct_host_call(self, call: HostToolCall) -> HostToolCall:
        """``call`` with an invocation id no other tool call of its turn has. An agent
        may run a host tool inside a tool call of its own and give both one id (omp's
        ``write`` to ``xd://<tool>``): the Master then sees two calls, each its own id."""
        turn = self.turn
        base = call.invocation_id
        if turn is None or not turn.has_tool(base) or self.host_calls.owns(base):
            return call
        n, invocation_id = 1, f"{base}-host"
        while turn.has_tool(invocation_id) or self.host_calls.owns(invocation_id):
            n += 1
            invocation_id = f"{base}-host-{n}"
        return replace(call, invocation_id=invocation_id)

    def open_host_call(self, call: HostToolCall) -> ToolInvokeRequest | HostToolOutcome:
        """Publish a host tool call for the Master, or refuse it (with its error result)."""
        refusal = self.host_call_refusal(call)
        if refusal is not None:
            return refusal
        return self.host_calls.open(call, self.limits.host_tool_timeout_ms)

    def host_call_refusal(self, call: HostToolCall) -> HostToolOutcome | None:
        """Refuse ``call`` now if the Master must not be asked (before any permission)."""
        if self.closing:
            return HostToolOutcome(
                output="the session is closing", is_error=True, resolution="session_end"
            )
        turn = self.turn
        if call.turn_id is not None and (
            turn is None or turn.turn.turn_id != call.turn_id or turn.aborting or turn.ended
        ):
            return HostToolOutcome(
                output="the turn has ended", is_error=True, resolution="cancelled"
            )
        refusal = self.host_calls.refusal(call)
        if refusal is None:
            return None
        return self.host_calls.refuse(call, *refusal)

    def host_call_denied(self, call: HostToolCall) -> HostToolOutcome:
        """The permission gate said no."""
        return self.host_calls.refuse(
            call, "denied", f"the Master did not allow {call.tool_name!r} to run"
        )

    def host_call_deadline(self, invocation_id: str) -> list[Effect]:
        return self.host_calls.settle(invocation_id, "deadline")

    def host_call_abandoned(self, invocation_id: str) -> list[Effect]:
        return self.host_calls.settle(invocation_id, "cancelled")

    def _host_answer(self, effects: list[Effect] | None, invocation_id: str) -> list[Effect]:
        if effects is None:
            message = self.host_calls.late_or_unknown(invocation_id)
            self._log.info("host tool answer ignored", invocation_id=invocation_id)
            self.session_error(SessionErrorCode.UNKNOWN_INVOCATION, message)
            return []
        return effects

    def _on_unknown(self, frame: UnknownFrame) -> None:
        known = self._unknown_types
        if frame.type in known or len(known) > REMEMBERED_UNKNOWN_TYPES:
            return
        if len(known) == REMEMBERED_UNKNOWN_TYPES:
            known.add("")  # full: said once, then nothing more is remembered
            self._log.info("unknown control frame types are no longer logged")
            return
        known.add(frame.type[:200])
        self._log.info("unknown control frame type skipped", frame_type=frame.type[:200])

    def _on_invalid_frame(self, exc: FrameError) -> list[Effect]:
        effects: list[Effect] = []
        if exc.frame_type == "control.interaction.response" and exc.data is not None:
            payload = exc.data.get("payload")
            interaction_id = payload.get("interaction_id") if isinstance(payload, dict) else None
            if isinstance(interaction_id, str) and interaction_id in self.interactions:
                effects = self.interactions.settle(interaction_id, "malformed", "master")
        self.session_error(exc.code, str(exc))
        return effects

    # ------------------------------------------------------------ turns

    def turn_finished(
        self, turn_id: str, result: TurnResult | None, error: AgentError | None
    ) -> list[Effect]:
        """``Adapter.prompt`` returned ``result``, raised ``error``, or (both None) was
        cancelled. After an abort, however the turn wound down, it was cancelled."""
        turn = self.turn
        if turn is None or turn.turn.turn_id != turn_id or turn.ended:
            return []
        if turn.aborting:
            if error is not None:
                self._log.info(
                    "failure after abort reported as cancelled",
                    turn_id=turn_id,
                    detail=error.message,
                )
            stop: StopReason = "cancelled"
            if result is not None and result.stop_reason not in ("end_turn", "error"):
                stop = result.stop_reason
            return self._end_turn(turn, None, stop, result)
        if result is not None:
            return self._end_turn(turn, None, result.stop_reason, result)
        return self._end_turn(turn, error, "error" if error is not None else "cancelled", None)

    def force_turn_end(
        self, turn_id: str, error: AgentError | None, stop: StopReason
    ) -> list[Effect]:
        """End the turn now, whatever its adapter call is doing (abort grace over, the
        agent gone)."""
        turn = self.turn
        if turn is None or turn.turn.turn_id != turn_id or turn.ended:
            return []
        return self._end_turn(turn, error, stop, None)

    def _end_turn(
        self,
        turn: TurnState,
        error: AgentError | None,
        stop: StopReason,
        result: TurnResult | None,
    ) -> list[Effect]:
        turn_id = turn.turn.turn_id
        effects = self._settle_turn(turn_id)
        for payload in turn.unfinished():
            self._put(payload)
        if stop == "error" and error is None and not turn.reported_error:
            error = AgentError(
                severity="error",
                error_code=AgentErrorCode.AGENT_ERROR,
                message="the agent ended the turn with an error and gave no detail",
            )
        usage = turn.total_usage(result)
        # Exactly one per turn: with no counts where the agent reported none (a cancelled
        # turn, an agent that never tells).
        counts = usage.model_dump(exclude_none=True) if usage is not None else {}
        self._number(SessionUsage(turn_id=turn_id, **counts), None)
        if error is not None:
            self._put(error)
        self._put(TurnEnd(turn_id=turn_id, stop_reason=stop, usage=usage))
        turn.ended = True
        if self.turn is turn:
            self.turn = None
        if not self.closing:
            self._set_state("idle")
        effects.append(TurnClosed(turn_id))
        return effects

    # ------------------------------------------------------------ operations

    def operation_failed(self, error: AgentError | None, unsupported: str | None) -> None:
        """A compaction or mode switch failed: ``UNSUPPORTED``, or the agent's error."""
        if unsupported is not None:
            self.session_error(SessionErrorCode.UNSUPPORTED, unsupported)
        elif error is not None:
            self._put(error)

    # ------------------------------------------------------------ interactions

    def open_interaction(self, question: Question) -> InteractionRequest | InteractionOutcome:
        """Publish a question, or say at once why it is denied."""
        turn_id = question.turn_id
        if self.closing:
            return InteractionOutcome(decision="deny", reason="closed")
        turn = self.turn
        if turn_id is not None and (
            turn is None or turn.turn.turn_id != turn_id or turn.aborting or turn.ended
        ):
            return InteractionOutcome(decision="deny", reason="aborted")
        request = self.interactions.open(question, self.limits.interaction_timeout_ms)
        if request is None:
            return InteractionOutcome(decision="deny", reason="overloaded")
        self._set_state("waiting_interaction")
        return request

    def interaction_deadline(self, interaction_id: str) -> list[Effect]:
        """The request's own ``timeout_ms`` passed with no answer."""
        return self.interactions.settle(interaction_id, "timeout", "deadline", report=False)

    def interaction_abandoned(self, interaction_id: str) -> list[Effect]:
        """The adapter stopped waiting (its call was cancelled)."""
        return self.interactions.settle(interaction_id, "cancelled", "agent", report=False)

    def _settle_turn(self, turn_id: str) -> list[Effect]:
        """Deny the questions and end the host calls of a turn that is aborted or ends."""
        return [
            *self.interactions.settle_turn(turn_id),
            *self.host_calls.settle_turn(turn_id),
        ]

    def _settle_all(self) -> list[Effect]:
        """Deny every question and end every host call: the session ends."""
        return [*self.interactions.settle_all(), *self.host_calls.settle_all()]

    def _interaction_settled(self) -> None:
        if self.closing or self.interactions:
            return
        if self.turn is not None:
            self._set_state("busy")
        elif self.compacting:
            self._set_state("compacting")
        else:
            self._set_state("idle")

    # ------------------------------------------------------------ emitting

    def emit_many(self, payloads: Iterable[ClientPayload]) -> None:
        """:meth:`emit` each payload in turn (what the adapter produced at one moment:
        their frames have one timestamp, and go to ``sink_many`` together)."""
        self._batch_timestamp = self._clock()
        batch = self._batch = [] if self._sink_many is not None else None
        text_fields = self._fields(TextDelta, None)
        try:
            emit = self.emit
            text_turn = self._text_turn()
            for payload in payloads:
                # Most payloads by far: the loop keeps _put's rules for them itself, and
                # copies the envelope fields all their frames share.
                if (
                    type(payload) is TextDelta
                    and text_turn is not None
                    and payload.turn_id == text_turn.turn.turn_id
                ):
                    text_turn.add_text(payload)
                    fields = text_fields.copy()
                    fields["seq"] = self.seq = self.seq + 1
                    fields["payload"] = payload
                    self._deliver(construct_unchecked(TextDeltaFrame, fields, _FIELDS_SET))
                else:
                    emit(payload)
                    text_turn = self._text_turn()
        finally:
            self._batch_timestamp = None
            self._batch = None
            if batch and self._sink_many is not None:
                self._sink_many(batch)

    def _text_turn(self) -> TurnState | None:
        """The turn a text delta of its own goes straight to, if the session is ready
        and open: the only rules of :meth:`_put` for such a delta are these."""
        return self.turn if self.ready and not self.sealed else None

    def emit(self, payload: ClientPayload) -> None:
        """A payload from the adapter. Frames the runtime owns (turn start and end,
        capabilities, questions and their resolution, state, session errors,
        ``session.closed``) are refused: only the runtime may say those."""
        kind = type(payload)
        if kind is TextDelta:
            turn = self._text_turn()
            if turn is not None and turn.turn.turn_id == payload.turn_id:  # type: ignore[union-attr]
                turn.add_text(payload)  # type: ignore[arg-type]
                self._number(payload, None)
                return
        if kind in RUNTIME_OWNED:
            self._refuse_forged(_FRAME_TYPES[kind][1])
            return
        if kind in _TOOL_PAYLOADS and self.host_calls.owns(payload.invocation_id):  # type: ignore[union-attr]
            # The agent's own report of a host tool call: the runtime reports those.
            return
        self._put(payload)

    def _refuse_forged(self, frame_type: str) -> None:
        """Say once per frame type that the adapter tried; the frame itself is dropped."""
        self._log.warning("adapter frame owned by the runtime dropped", frame_type=frame_type)
        if frame_type not in self._forged:
            self._forged.add(frame_type)
            self._put(
                AgentError(
                    severity="warning",
                    error_code=AgentErrorCode.PROTOCOL_ERROR,
                    message=FORGED_FRAME.format(frame_type=frame_type),
                )
            )

    def _put(self, payload: ClientPayload, metadata: FrameMetadata | None = None) -> None:
        """Number one payload into a frame, after the turn rules have had their say."""
        if self.sealed:
            self._log.warning("frame after session.closed dropped", payload=type(payload).__name__)
            return
        if not self.ready:
            if len(self._early) < self.limits.frame_buffer:
                self._early.append(payload)
            else:
                self._early_dropped += 1
            return
        turn = self.turn
        kind = type(payload)
        if kind in _FENCED:
            turn_id: str | None = getattr(payload, "turn_id", None)
            if turn_id is not None:
                if turn is None or turn.turn.turn_id != turn_id:
                    # Turn-id fencing: nothing of a turn appears after its end.
                    self._log.debug(
                        "stale frame of a finished turn dropped",
                        turn_id=turn_id,
                        payload=kind.__name__,
                    )
                    return
                if type(payload) is SessionUsage:  # isinstance is slow on pydantic models
                    turn.add_usage(payload)
                    if self.limits.usage_steps:
                        self._number(payload, _STEP_METADATA)
                    return
        if turn is not None:
            if kind is AgentError:
                turn.reported_error = True
            elif not turn.track(payload, self._log):
                return
        self._number(payload, metadata)

    def _number(self, payload: ClientPayload, metadata: FrameMetadata | None) -> None:
        """Make the next frame. Callers have kept the rules (:meth:`_put`, or the turn's
        own usage sum at its end, which comes before ``session.closed``)."""
        fields = self._fields(type(payload), metadata)
        fields["seq"] = self.seq = self.seq + 1
        fields["payload"] = payload
        self._deliver(construct_unchecked(_FRAME_TYPES[type(payload)][0], fields, _FIELDS_SET))

    def _fields(self, kind: type[ClientPayload], metadata: FrameMetadata | None) -> dict[str, Any]:
        """The envelope of the next frame for a ``kind`` payload, bar its seq and
        payload (in the model's field order)."""
        return {
            "version": DPS_VERSION,
            "type": _FRAME_TYPES[kind][1],
            "session_id": self.session_id,
            "seq": None,
            "timestamp": self._batch_timestamp or self._clock(),
            "metadata": metadata,
            "payload": None,
        }

    def _deliver(self, frame: ClientFrame) -> None:
        if self._batch is not None:
            self._batch.append(frame)
        else:
            self._sink(frame)

    def session_error(self, code: SessionErrorCode, message: str) -> None:
        """Answer the Master's input. While the host is behind, answers are counted,
        not queued, and summed up in one once it has room."""
        self._log.info("session error", error_code=code.value, detail=message)
        if not self.closing and self._backlogged():
            self._unanswered += 1
            return
        self.put_unanswered_summary()
        self._put(SessionError(error_code=code, message=message, fatal=False))

    def put_unanswered_summary(self) -> None:
        """One answer for the control frames refused while the host was behind."""
        if self._unanswered and not self.sealed:
            count, self._unanswered = self._unanswered, 0
            self._put(
                SessionError(
                    error_code=SessionErrorCode.INVALID_FRAME,
                    message=f"{count} more control frames were refused without an answer "
                    f"each: they came while {self.limits.frame_buffer} frames (the "
                    "session's frame_buffer) were waiting to be written to the Master",
                    fatal=False,
                )
            )

    def _set_state(self, state: AgentState) -> None:
        if state in ("idle", "busy") and self.interactions:
            state = "waiting_interaction"
        if state != self._state:
            self._state = state
            self._put(_STATE_CHANGES[state])
