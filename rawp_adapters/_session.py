"""The session runtime: wraps any adapter and keeps the protocol's invariants.

It owns the session id, ``seq`` and timestamps, ``session.capabilities`` as the
first frame, the one-prompt-in-flight guard, exactly one ``session.turn.end`` per
``session.turn.start``, the interaction broker, ``UNSUPPORTED`` answers and
``session.closed`` as the last frame. Adapters never re-implement these.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskGroup
from structlog.stdlib import BoundLogger

from rawp_adapters._adapter import (
    Adapter,
    AgentExit,
    CloseResult,
    InteractionOutcome,
    Turn,
    TurnResult,
)
from rawp_adapters._broker import InteractionBroker
from rawp_adapters._codec import (
    CLIENT_FRAME_TYPES,
    FRAME_CLASS_BY_PAYLOAD,
    check_version,
    decode_frame,
    utc_timestamp,
)
from rawp_adapters._control import ControlFrames
from rawp_adapters._errors import AgentFailure, FrameError, SessionClosedError, UnsupportedOperation
from rawp_adapters._frames import (
    DPS_VERSION,
    AgentError,
    AgentErrorCode,
    AgentState,
    AgentStateChanged,
    ClientFrame,
    ClientPayload,
    CloseReason,
    ControlFrame,
    Features,
    InteractionContext,
    InteractionRequest,
    InteractionResponseFrame,
    InteractionTimeoutFrame,
    InteractionType,
    ModeSwitchFrame,
    PromptAbortFrame,
    PromptRequestFrame,
    SessionCapabilities,
    SessionClosed,
    SessionCompactFrame,
    SessionEndFrame,
    SessionError,
    SessionErrorCode,
    StopReason,
    ToolInvokeRequest,
    ToolInvokeResult,
    TurnEnd,
    TurnStart,
    UnknownFrame,
)
from rawp_adapters._framing import OversizedLine
from rawp_adapters._logging import get_logger
from rawp_adapters._queue import FrameQueue


@dataclass(frozen=True, slots=True)
class SessionOptions:
    """Bounds the runtime keeps. Every wait it does on an adapter is bounded."""

    frame_buffer: int = 1024
    """Frames held for a slow host before adapters are made to wait."""
    interaction_timeout_ms: int = 60_000
    """Default deadline of an interaction when the adapter names none."""
    start_timeout: float = 60.0
    """How long the agent may take to become ready."""
    abort_grace: float = 5.0
    """After an abort, how long the turn may take to end before it is ended for it."""
    close_timeout: float = 30.0
    """Bound on the adapter's own shutdown."""
    max_open_interactions: int = 256
    """Questions an agent may have open at once; more are denied at once."""


_REMEMBERED_UNKNOWN_TYPES = 64
"""Distinct unknown control frame types logged once each; later ones are not logged."""


UNFINISHED_TOOL_OUTPUT = "The turn ended before this tool call finished."


class _ActiveTurn:
    __slots__ = ("aborting", "ended", "forced", "running_tools", "scope", "turn")

    def __init__(self, turn: Turn) -> None:
        self.turn = turn
        self.scope = anyio.CancelScope()
        self.ended = anyio.Event()
        self.aborting = False
        self.forced: tuple[AgentError | None, StopReason] | None = None
        self.running_tools: dict[str, None] = {}
        """Tool calls of this turn with no result yet, in the order they started."""


class Session:
    """One live session. Use :func:`open_session` to get one.

    Read frames with ``async for frame in session``; the stream ends after
    ``session.closed``. Send control frames with :meth:`send` (typed) or
    :meth:`send_line` (raw JSON, bad input answered with ``session.error``).
    """

    def __init__(
        self,
        adapter: Adapter,
        *,
        workspace: Path,
        session_id: str,
        options: SessionOptions,
        task_group: TaskGroup,
    ) -> None:
        self.adapter = adapter
        self.session_id = session_id
        self.workspace = workspace
        self.options = options
        self.control = ControlFrames(session_id)
        """Builds control frames for this session (for in-process hosts)."""
        self._tg = task_group
        self._log: BoundLogger = get_logger("rawp_adapters.session").bind(
            session_id=session_id, adapter_type=adapter.adapter_type
        )
        self._queue: FrameQueue[ClientFrame] = FrameQueue(options.frame_buffer)
        self._seq = 0
        self._sealed = False
        self._ready = False
        self._early: list[ClientPayload] = []
        self._early_dropped = 0
        self._unanswered_errors = 0
        self._features: Features | None = None
        self._state: AgentState | None = None
        self._turn: _ActiveTurn | None = None
        self._busy_compacting = False
        self._closing = False
        self._closed = anyio.Event()
        self._unknown_types: set[str] = set()
        self._exit_before_ready: AgentExit | None = None
        self._context = _Context(self)
        self._broker = InteractionBroker(
            publish=self._publish_interaction,
            report=self._session_error,
            default_timeout_ms=options.interaction_timeout_ms,
            max_open=options.max_open_interactions,
            log=self._log,
        )

    # ------------------------------------------------------------ host side

    @property
    def features(self) -> Features:
        return self._features if self._features is not None else self.adapter.features

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    @property
    def turn_id(self) -> str | None:
        """The running turn, if any."""
        return self._turn.turn.turn_id if self._turn is not None else None

    def __aiter__(self) -> AsyncIterator[ClientFrame]:
        return self._queue.__aiter__()

    async def receive(self) -> ClientFrame:
        """The next frame; raises ``anyio.EndOfStream`` after ``session.closed``."""
        return await self._queue.get()

    async def wait_closed(self) -> None:
        await self._closed.wait()

    async def send(self, frame: ControlFrame | UnknownFrame) -> None:
        """Hand one control frame to the session.

        Raises :class:`SessionClosedError` once ``session.closed`` has been emitted.
        """
        if self._sealed:
            raise SessionClosedError(f"session {self.session_id} is closed")
        if self._closing:
            self._session_error(
                SessionErrorCode.SESSION_CLOSED, f"session is closing; {frame.type} ignored"
            )
            return
        if frame.version != DPS_VERSION:
            try:
                check_version(frame.version)
            except FrameError as exc:
                self._on_invalid_frame(exc)
                return
        if frame.session_id != self.session_id:
            self._session_error(
                SessionErrorCode.INVALID_FRAME,
                f"{frame.type} names session {frame.session_id}, not this one; ignored",
            )
            return
        match frame:
            case PromptRequestFrame():
                self._on_prompt(frame)
            case PromptAbortFrame():
                self._on_abort(frame.payload.turn_id)
            case InteractionResponseFrame():
                self._broker.answer(frame.payload)
            case InteractionTimeoutFrame():
                self._broker.expire(frame.payload.interaction_id)
            case SessionCompactFrame():
                self._on_compact(frame.payload.custom_instructions)
            case ModeSwitchFrame():
                self._on_mode_switch(frame)
            case SessionEndFrame():
                # Deny now, not when the close task runs: an answer sent after the end
                # frame must not be applied.
                self._broker.deny_all("closed")
                self._tg.start_soon(self.close)
            case UnknownFrame():
                self._on_unknown(frame)

    async def send_line(self, line: bytes | str | OversizedLine) -> None:
        """Decode one JSON line and send it; bad input gets ``session.error`` INVALID_FRAME.

        Takes :class:`LineFramer` output as it is: an :class:`OversizedLine` (a line the
        framer skipped) is bad input too.
        """
        if isinstance(line, OversizedLine):
            self._session_error(
                SessionErrorCode.INVALID_FRAME,
                f"a line of {line.size} bytes is over the size limit; skipped",
            )
            return
        try:
            frame = decode_frame(line)
        except FrameError as exc:
            self._on_invalid_frame(exc)
            return
        if frame.type in CLIENT_FRAME_TYPES:
            self._session_error(
                SessionErrorCode.INVALID_FRAME,
                f"{frame.type} goes from Client to Master; a session only takes control frames",
            )
            return
        await self.send(frame)  # type: ignore[arg-type]

    async def close(self, reason: CloseReason = "explicit") -> None:
        """End the session: abort the turn, deny interactions, stop the agent, then
        emit ``session.closed``. Idempotent; finishes even when cancelled."""
        await self._close(reason, None)

    # ------------------------------------------------------------ lifecycle

    async def _start(self) -> None:
        failure: AgentError | None = None
        try:
            with anyio.fail_after(self.options.start_timeout):
                await self.adapter.start(self._context)
        except AgentFailure as exc:
            failure = exc.error
        except TimeoutError:
            failure = AgentError(
                severity="fatal",
                error_code=AgentErrorCode.SPAWN_FAILED,
                message=f"the agent was not ready within {self.options.start_timeout:g} s",
            )
        except Exception as exc:
            self._log.exception("adapter start failed")
            failure = AgentError(
                severity="fatal",
                error_code=AgentErrorCode.SPAWN_FAILED,
                message=f"{type(exc).__name__}: {exc}",
            )
        self._features = self.adapter.features
        self._ready = True
        self._put(
            SessionCapabilities(
                adapter_type=self._features.adapter_type,
                features=self._features,
                agent=self.adapter.agent_info,
            )
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
                    f"ready were dropped (more than {self.options.frame_buffer})",
                )
            )
        if failure is not None:
            await self._close("error", AgentExit(error=failure))
        elif self._exit_before_ready is not None:
            await self._close("agent_exit", self._exit_before_ready)
        else:
            self._set_state("idle")

    async def _close(self, reason: CloseReason, agent_exit: AgentExit | None) -> None:
        if self._closing:
            await self._closed.wait()
            return
        self._closing = True
        with anyio.CancelScope(shield=True):
            self._set_state("stopping")
            self._broker.deny_all("closed")
            active = self._turn
            if active is not None:
                if agent_exit is not None:
                    stop: StopReason = "error" if agent_exit.error is not None else "end_turn"
                    self._force_turn_end(active, agent_exit.error, stop)
                else:
                    await self._abort_and_wait(active)
            elif agent_exit is not None and agent_exit.error is not None:
                self._put(agent_exit.error)
            result = CloseResult()
            with anyio.move_on_after(self.options.close_timeout) as bound:
                try:
                    result = await self.adapter.close()
                except Exception:
                    self._log.exception("adapter close failed")
            if bound.cancelled_caught:
                self._log.error(
                    "adapter close exceeded its bound", bound=self.options.close_timeout
                )
            if agent_exit is not None:
                result = CloseResult(
                    agent_exit.exit_code if agent_exit.exit_code is not None else result.exit_code,
                    agent_exit.signal or result.signal,
                )
            self._set_state("stopped")
            self._put_unanswered_summary()
            self._put(
                SessionClosed(reason=reason, exit_code=result.exit_code, signal=result.signal)
            )
            self._sealed = True
            self._queue.close()
            self._closed.set()

    # ------------------------------------------------------------ turns

    def _on_prompt(self, frame: PromptRequestFrame) -> None:
        if self._turn is not None or self._busy_compacting:
            busy = "a turn" if self._turn is not None else "a compaction"
            self._session_error(
                SessionErrorCode.PROMPT_IN_PROGRESS,
                f"{busy} is in progress; prompt {frame.payload.prompt_id} was not passed on",
            )
            return
        if not self._ready:
            self._session_error(SessionErrorCode.PROMPT_IN_PROGRESS, "the agent is starting")
            return
        active = _ActiveTurn(Turn(turn_id=str(uuid.uuid4()), request=frame.payload))
        self._turn = active
        self._put(TurnStart(turn_id=active.turn.turn_id, prompt_id=frame.payload.prompt_id))
        self._set_state("busy")
        self._tg.start_soon(self._run_turn, active)

    async def _run_turn(self, active: _ActiveTurn) -> None:
        log = self._log.bind(turn_id=active.turn.turn_id)
        result: TurnResult | None = None
        error: AgentError | None = None
        with active.scope:
            try:
                result = await self.adapter.prompt(active.turn)
            except AgentFailure as exc:
                error = exc.error
            except Exception as exc:
                log.exception("adapter prompt raised")
                error = AgentError(
                    severity="error",
                    error_code=AgentErrorCode.AGENT_ERROR,
                    message=f"{type(exc).__name__}: {exc}",
                )
        if active.forced is not None:
            error, stop = active.forced
            self._end_turn(active, error, stop, None)
        elif result is not None:
            stop = result.stop_reason
            if active.aborting and stop in ("end_turn", "error"):
                # The Master asked it to stop: however the agent wound down, it was cancelled.
                stop = "cancelled"
            self._end_turn(active, None, stop, result)
        else:
            self._end_turn(active, error, "error" if error is not None else "cancelled", None)

    def _on_abort(self, turn_id: str | None) -> None:
        active = self._turn
        if active is None or (turn_id is not None and turn_id != active.turn.turn_id):
            detail = "no turn is running" if active is None else f"turn {turn_id} is not running"
            self._session_error(SessionErrorCode.NO_ACTIVE_TURN, f"{detail}; abort ignored")
            return
        if not active.aborting:
            # Deny now, not when the abort task runs: an answer sent after the abort
            # frame must not be applied, nor a new interaction of this turn opened.
            active.aborting = True
            self._broker.deny_turn(active.turn.turn_id, "aborted")
            self._tg.start_soon(self._abort_and_wait, active)

    async def _abort_and_wait(self, active: _ActiveTurn) -> None:
        active.aborting = True
        self._broker.deny_turn(active.turn.turn_id, "aborted")
        with anyio.move_on_after(self.options.abort_grace):
            try:
                await self.adapter.abort(active.turn)
            except Exception:
                self._log.exception("adapter abort raised")
            await active.ended.wait()
        if not active.ended.is_set():
            self._log.warning(
                "turn did not end after abort; ending it",
                turn_id=active.turn.turn_id,
                grace=self.options.abort_grace,
            )
            self._force_turn_end(active, None, "cancelled")

    def _force_turn_end(
        self, active: _ActiveTurn, error: AgentError | None, stop: StopReason
    ) -> None:
        if active.forced is None:
            active.forced = (error, stop)
        active.scope.cancel()
        # The turn task emits the end when it unwinds; if it cannot run (an adapter
        # that shields its prompt), ending here keeps the pairing exact.
        self._end_turn(active, error, stop, None)

    def _end_turn(
        self,
        active: _ActiveTurn,
        error: AgentError | None,
        stop: StopReason,
        result: TurnResult | None,
    ) -> None:
        if active.ended.is_set():
            return
        for invocation_id in list(active.running_tools):
            self._put(
                ToolInvokeResult(
                    invocation_id=invocation_id,
                    output_type="text",
                    output=UNFINISHED_TOOL_OUTPUT,
                    is_error=True,
                    turn_id=active.turn.turn_id,
                )
            )
        if error is not None:
            self._put(error)
        usage = result.usage if result is not None else None
        self._put(TurnEnd(turn_id=active.turn.turn_id, stop_reason=stop, usage=usage))
        active.ended.set()
        self._broker.deny_turn(active.turn.turn_id, "aborted")
        if self._turn is active:
            self._turn = None
        if not self._closing:
            self._set_state("idle")

    # ------------------------------------------------------------ other control

    def _on_compact(self, custom_instructions: str | None) -> None:
        if not self.features.context_compaction:
            self._session_error(
                SessionErrorCode.UNSUPPORTED, "this agent does not support context compaction"
            )
            return
        if self._turn is not None or self._busy_compacting:
            self._session_error(
                SessionErrorCode.PROMPT_IN_PROGRESS, "compaction waits until nothing is running"
            )
            return
        self._busy_compacting = True
        self._set_state("compacting")
        self._tg.start_soon(self._compact, custom_instructions)

    async def _compact(self, custom_instructions: str | None) -> None:
        try:
            await self._run_operation(self.adapter.compact(custom_instructions))
        finally:
            self._busy_compacting = False
            if not self._closing:
                self._set_state("idle")

    def _on_mode_switch(self, frame: ModeSwitchFrame) -> None:
        if not self.features.plan_mode:
            self._session_error(SessionErrorCode.UNSUPPORTED, "this agent has no plan mode")
            return
        self._tg.start_soon(self._run_operation, self.adapter.switch_mode(frame.payload.mode))

    async def _run_operation(self, operation: Any) -> None:
        try:
            await operation
        except UnsupportedOperation as exc:
            self._session_error(SessionErrorCode.UNSUPPORTED, str(exc))
        except AgentFailure as exc:
            self._put(exc.error)
        except Exception as exc:
            self._log.exception("adapter operation raised")
            self._put(
                AgentError(
                    severity="error",
                    error_code=AgentErrorCode.AGENT_ERROR,
                    message=f"{type(exc).__name__}: {exc}",
                )
            )

    def _on_unknown(self, frame: UnknownFrame) -> None:
        known = self._unknown_types
        if frame.type in known or len(known) > _REMEMBERED_UNKNOWN_TYPES:
            return
        if len(known) == _REMEMBERED_UNKNOWN_TYPES:
            known.add("")  # full: logged once, then nothing more is remembered
            self._log.info("unknown control frame types are no longer logged")
            return
        known.add(frame.type[:200])
        self._log.info("unknown control frame type skipped", frame_type=frame.type[:200])

    def _on_invalid_frame(self, exc: FrameError) -> None:
        if exc.frame_type == "control.interaction.response" and exc.data is not None:
            payload = exc.data.get("payload")
            interaction_id = payload.get("interaction_id") if isinstance(payload, dict) else None
            if isinstance(interaction_id, str):
                self._broker.reject_malformed(interaction_id)
        self._session_error(exc.code, str(exc))

    # ------------------------------------------------------------ emitting

    def _put(self, payload: ClientPayload) -> None:
        if self._sealed:
            self._log.warning("frame after session.closed dropped", payload=type(payload).__name__)
            return
        if not self._ready:
            if len(self._early) < self.options.frame_buffer:
                self._early.append(payload)
            else:
                self._early_dropped += 1
            return
        active = self._turn
        turn_id = getattr(payload, "turn_id", None)
        if turn_id is not None and self._is_stale(turn_id, active, payload):
            self._log.debug(
                "stale frame of a finished turn dropped",
                turn_id=turn_id,
                payload=type(payload).__name__,
            )
            return
        if active is not None:
            if isinstance(payload, ToolInvokeRequest):
                active.running_tools[payload.invocation_id] = None
            elif isinstance(payload, ToolInvokeResult):
                active.running_tools.pop(payload.invocation_id, None)
        self._seq += 1
        # Validated construction is faster than model_construct (pydantic-core does it).
        frame_class: Any = FRAME_CLASS_BY_PAYLOAD[type(payload)]
        frame: ClientFrame = frame_class(
            version=DPS_VERSION,
            session_id=self.session_id,
            seq=self._seq,
            timestamp=utc_timestamp(),
            payload=payload,
        )
        self._queue.put(frame)

    @staticmethod
    def _is_stale(turn_id: str, active: _ActiveTurn | None, payload: ClientPayload) -> bool:
        """A frame about a turn that is not the running one (turn-id fencing)."""
        if isinstance(payload, TurnEnd | TurnStart):
            return False
        return active is None or active.turn.turn_id != turn_id or active.ended.is_set()

    async def _emit(self, payload: ClientPayload) -> None:
        self._put(payload)
        if self._queue.full:  # the hot path skips the await when there is room
            await self._queue.wait_for_room()

    def _session_error(self, code: SessionErrorCode, message: str) -> None:
        """Answer the Master's input. While the Master is not reading (the queue is at
        its bound) answers are counted, not queued, and summed up in one once it reads."""
        self._log.info("session error", error_code=code.value, detail=message)
        if self._queue.full and not self._closing:
            self._unanswered_errors += 1
            return
        self._put_unanswered_summary()
        self._put(SessionError(error_code=code, message=message, fatal=False))

    def _put_unanswered_summary(self) -> None:
        if self._unanswered_errors:
            count, self._unanswered_errors = self._unanswered_errors, 0
            self._put(
                SessionError(
                    error_code=SessionErrorCode.INVALID_FRAME,
                    message=f"{count} control frames were refused without an answer each "
                    "while the Master was not reading its frames",
                    fatal=False,
                )
            )

    def _set_state(self, state: AgentState) -> None:
        if state in ("idle", "busy") and self._broker.open_count:
            state = "waiting_interaction"
        if state != self._state:
            self._state = state
            self._put(AgentStateChanged(state=state))

    def _publish_interaction(self, request: InteractionRequest) -> None:
        self._put(request)
        if not self._closing:
            self._set_state("waiting_interaction")

    def _interaction_settled(self) -> None:
        if self._closing or self._broker.open_count:
            return
        if self._turn is not None:
            self._set_state("busy")
        elif self._busy_compacting:
            self._set_state("compacting")
        else:
            self._set_state("idle")


class _Context:
    """The :class:`SessionContext` a session hands its adapter."""

    def __init__(self, session: Session) -> None:
        self._session = session

    @property
    def session_id(self) -> str:
        return self._session.session_id

    @property
    def workspace(self) -> Path:
        return self._session.workspace

    @property
    def log(self) -> BoundLogger:
        return self._session._log

    async def emit(self, payload: ClientPayload) -> None:
        await self._session._emit(payload)

    async def interact(
        self,
        interaction_type: InteractionType,
        *,
        turn_id: str | None = None,
        title: str | None = None,
        message: str | None = None,
        options: list[str] | None = None,
        context: InteractionContext | Mapping[str, Any] | None = None,
        timeout_ms: int | None = None,
    ) -> InteractionOutcome:
        session = self._session
        if session._closing:
            return InteractionOutcome(decision="deny", reason="closed")
        active = session._turn
        if turn_id is not None and (
            active is None or active.turn.turn_id != turn_id or active.aborting
        ):
            return InteractionOutcome(decision="deny", reason="aborted")
        try:
            return await session._broker.ask(
                interaction_type,
                turn_id=turn_id,
                title=title,
                message=message,
                options=options,
                context=context,
                timeout_ms=timeout_ms,
            )
        finally:
            session._interaction_settled()

    def agent_exited(self, exit: AgentExit) -> None:
        session = self._session
        if not session._ready:
            session._exit_before_ready = exit
        elif not session._closing:
            session._tg.start_soon(session._close, "agent_exit", exit)

    def start_soon(
        self, func: Callable[[], Coroutine[Any, Any, object]], *, name: str | None = None
    ) -> None:
        self._session._tg.start_soon(func, name=name)


@asynccontextmanager
async def open_session(
    adapter: Adapter,
    *,
    workspace: str | Path,
    session_id: str | None = None,
    options: SessionOptions | None = None,
) -> AsyncIterator[Session]:
    """Start ``adapter`` in a new session and yield it once the agent is ready.

    ``session.capabilities`` is already queued when this yields (followed by
    ``agent.error`` and ``session.closed`` when the agent could not start). On exit
    the session is closed explicitly unless it already is.
    """
    path = Path(workspace)
    if not path.is_absolute() or not await anyio.Path(path).is_dir():
        raise ValueError(f"workspace must be an existing absolute directory: {workspace}")
    async with anyio.create_task_group() as tg:
        session = Session(
            adapter,
            workspace=path,
            session_id=session_id or str(uuid.uuid4()),
            options=options or SessionOptions(),
            task_group=tg,
        )
        try:
            await session._start()
            yield session
        finally:
            with anyio.CancelScope(shield=True):
                await session.close()
            tg.cancel_scope.cancel()
