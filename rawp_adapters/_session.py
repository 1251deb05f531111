"""The session runtime: the anyio driver around the protocol state.

:class:`rawp_adapters._protocol.SessionProtocol` decides everything the protocol
says (``seq``, capabilities first, one prompt in flight, turn pairing, the
interaction ledger, ``session.closed`` last). This module carries out what it
asks for: it runs the adapter's calls as tasks, keeps every wait bounded
(start, abort grace, interaction deadlines, close), and queues frames for the
host with backpressure.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import msgspec
from anyio.abc import TaskGroup

from rawp_adapters._adapter import (
    HOST_TOOL_TIMEOUT_MS,
    Adapter,
    AgentExit,
    CloseResult,
    HostToolCall,
    HostToolOutcome,
    InteractionOutcome,
    Progress,
    Question,
    Turn,
    TurnResult,
)
from rawp_adapters._control import ControlFrames
from rawp_adapters._errors import (
    AgentFailure,
    OperationRejected,
    UnsupportedOperation,
    WorkspaceError,
)
from rawp_adapters._frames import (
    AgentError,
    AgentErrorCode,
    ClientFrame,
    ClientPayload,
    CloseReason,
    ControlFrame,
    Features,
    ModelListRequest,
    ModelSet,
    ModeSwitch,
    PlanSet,
    PromptSteer,
    SessionErrorCode,
    ToolCatalogPublish,
    UnknownFrame,
)
from rawp_adapters._framing import OversizedLine
from rawp_adapters._logging import get_logger
from rawp_adapters._protocol import (
    AbortTurn,
    BeginClose,
    Configuration,
    Effect,
    HostCallProgress,
    Limits,
    RunCompact,
    RunConfiguration,
    RunSteer,
    RunTurn,
    SessionProtocol,
    SettleHostCall,
    SettleInteraction,
    TurnClosed,
)
from rawp_adapters._queue import FrameQueue
from rawp_adapters._telemetry import attach, session_telemetry

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from structlog.stdlib import BoundLogger


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
    """Questions an agent may have open at once; more are denied at once (the same bound
    holds for host tool calls)."""
    host_tool_timeout_ms: int = HOST_TOOL_TIMEOUT_MS
    """How long the Master may take to answer a host tool call before the agent is told
    it failed."""
    usage_steps: bool = False
    """Also pass on each model step's ``session.usage`` (marked ``usage_scope: step``);
    the turn's sum comes once at its end either way."""


# msgspec Structs, not dataclasses: defined at each ``serve --stdio`` start, ~40x faster.
class _TurnTask(msgspec.Struct):
    after: anyio.Event | None
    """The configuration sent before the prompt: the turn runs as it asked for."""
    scope: anyio.CancelScope = msgspec.field(default_factory=anyio.CancelScope)
    ended: anyio.Event = msgspec.field(default_factory=anyio.Event)


class _Waiter(msgspec.Struct):
    deadline: float
    """When :meth:`Session._keep_deadlines` denies it (``anyio.current_time`` based)."""
    done: anyio.Event = msgspec.field(default_factory=anyio.Event)
    outcome: InteractionOutcome | None = None


class _HostCallWaiter(msgspec.Struct):
    changed: anyio.Event = msgspec.field(default_factory=anyio.Event)
    progress: list[str] = msgspec.field(default_factory=list)
    outcome: HostToolOutcome | None = None


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
        self._telemetry = telemetry = session_telemetry(session_id, adapter.adapter_type)
        sink: Callable[[ClientFrame], None] = self._queue.put
        sink_many: Callable[[list[ClientFrame]], None] = self._queue.put_many
        if telemetry is not None:
            sink, sink_many = telemetry.sinks(sink, sink_many)
        self._protocol = SessionProtocol(
            session_id,
            sink=sink,
            sink_many=sink_many,
            log=self._log,
            limits=Limits(
                frame_buffer=options.frame_buffer,
                max_open_interactions=options.max_open_interactions,
                interaction_timeout_ms=options.interaction_timeout_ms,
                host_tool_timeout_ms=options.host_tool_timeout_ms,
                usage_steps=options.usage_steps,
            ),
            backlogged=self._behind,
        )
        self._turns: dict[str, _TurnTask] = {}
        self._waiters: dict[str, _Waiter] = {}
        self._deadline_sleep: anyio.CancelScope | None = None
        """The deadline keeper's sleep, which ends at the earliest deadline it knows of."""
        self._host_waiters: dict[str, _HostCallWaiter] = {}
        self._last_switch: anyio.Event | None = None
        self._last_steer: anyio.Event | None = None
        self._catching_up = False
        self._closing = False
        self._closed = anyio.Event()
        self._tasks: set[anyio.CancelScope] = set()
        self._tasks_stopped = False
        self._context = _Context(self)
        if telemetry is not None:
            protocol = self._protocol
            protocol.on_prompt = telemetry.prompt
            telemetry.count_frames(lambda: protocol.seq)

    # ------------------------------------------------------------ host side

    @property
    def features(self) -> Features:
        features = self._protocol.features
        return features if features is not None else self.adapter.features

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    @property
    def turn_id(self) -> str | None:
        """The running turn, if any."""
        turn = self._protocol.turn
        return turn.turn.turn_id if turn is not None else None

    def __aiter__(self) -> AsyncIterator[ClientFrame]:
        return self._queue.__aiter__()

    async def receive(self) -> ClientFrame:
        """The next frame; raises ``anyio.EndOfStream`` after ``session.closed``."""
        return await self._queue.get()

    async def receive_all(self) -> list[ClientFrame]:
        """Every frame queued, at least one (waits for it); raises ``anyio.EndOfStream``
        after ``session.closed``. For a host that handles what came at once together
        (:func:`rawp_adapters.host.serve_stream` writes it in one go)."""
        return await self._queue.get_all()

    async def wait_closed(self) -> None:
        await self._closed.wait()

    def tool_call_context(self, invocation_id: str) -> Context | None:
        """The trace context of a running tool call (its ``execute_tool`` span), for
        the Master's code that runs it; ``None`` when telemetry is off."""
        telemetry = self._telemetry
        return telemetry.tool_context(invocation_id) if telemetry is not None else None

    async def send(self, frame: ControlFrame | UnknownFrame) -> None:
        """Hand one control frame to the session.

        Raises :class:`SessionClosedError` once ``session.closed`` has been emitted.
        """
        self._carry_out(self._protocol.control(frame))

    async def send_line(self, line: bytes | str | OversizedLine) -> None:
        """Decode one JSON line and send it; bad input gets ``session.error`` INVALID_FRAME.

        Takes :class:`LineFramer` output as it is: an :class:`OversizedLine` (a line the
        framer skipped) is bad input too.
        """
        self._carry_out(self._protocol.control_line(line))

    async def close(self, reason: CloseReason = "explicit") -> None:
        """End the session: abort the turn, deny interactions, stop the agent, then
        emit ``session.closed``. Idempotent; finishes even when cancelled."""
        await self._close(reason, None)

    # ------------------------------------------------------------ effects

    def _carry_out(self, effects: Iterable[Effect]) -> None:
        for effect in effects:
            match effect:
                case RunTurn(turn):
                    task = _TurnTask(self._last_switch)
                    self._turns[turn.turn_id] = task
                    self._spawn(self._run_turn, turn, task)
                case AbortTurn(turn):
                    self._spawn(self._abort, turn)
                case TurnClosed(turn_id):
                    ended = self._turns.pop(turn_id, None)
                    if ended is not None:
                        ended.scope.cancel()
                        ended.ended.set()
                case SettleInteraction(interaction_id, outcome):
                    waiter = self._waiters.get(interaction_id)
                    if waiter is not None:
                        waiter.outcome = outcome
                        waiter.done.set()
                case RunCompact(custom_instructions):
                    self._spawn(self._compact, custom_instructions, self._last_switch)
                case RunConfiguration(request):
                    previous, self._last_switch = self._last_switch, anyio.Event()
                    self._spawn(self._configure, request, previous, self._last_switch)
                case RunSteer(turn, message):
                    previous, self._last_steer = self._last_steer, anyio.Event()
                    self._spawn(self._steer, turn, message, previous, self._last_steer)
                case HostCallProgress(invocation_id, output):
                    host_waiter = self._host_waiters.get(invocation_id)
                    if host_waiter is not None:
                        host_waiter.progress.append(output)
                        host_waiter.changed.set()
                case SettleHostCall(invocation_id, host_outcome):
                    host_waiter = self._host_waiters.get(invocation_id)
                    if host_waiter is not None:
                        host_waiter.outcome = host_outcome
                        host_waiter.changed.set()
                case BeginClose(reason, agent_exit):
                    self._spawn(self._close, reason, agent_exit)

    # ------------------------------------------------------------ tasks

    def _spawn(
        self,
        func: Callable[..., Coroutine[Any, Any, object]],
        *args: object,
        name: str | None = None,
    ) -> None:
        self._tg.start_soon(
            self._insulated, func, args, name=name or getattr(func, "__qualname__", None)
        )

    async def _insulated(
        self, func: Callable[..., Coroutine[Any, Any, object]], args: tuple[object, ...]
    ) -> None:
        """Run one of the session's tasks (its turns, the adapter's readers, ...) out of
        reach of the Master's cancellation: when the Master's task is cancelled, the
        close that follows still needs them to see the turn end and the agent stop.
        :meth:`_stop_tasks` ends them once the session is closed."""
        with anyio.CancelScope(shield=True) as scope:
            if self._tasks_stopped:
                scope.cancel()
            self._tasks.add(scope)
            try:
                await func(*args)
            finally:
                self._tasks.discard(scope)

    def _stop_tasks(self) -> None:
        self._tasks_stopped = True
        for scope in self._tasks:
            scope.cancel()

    # ------------------------------------------------------------ lifecycle

    async def _start(self) -> None:
        failure: AgentError | None = None
        telemetry = self._telemetry
        try:
            with (
                anyio.fail_after(self.options.start_timeout),
                attach(telemetry.start_context() if telemetry is not None else None),
            ):
                await self.adapter.start(self._context)
        except TimeoutError:
            failure = AgentError(
                severity="fatal",
                error_code=AgentErrorCode.SPAWN_FAILED,
                message=f"the agent was not ready within {self.options.start_timeout:g} s",
            )
        except Exception as exc:
            failure = self._failure(exc, "adapter start failed", AgentErrorCode.SPAWN_FAILED)
        effects = self._protocol.started(self.adapter.features, self.adapter.agent_info, failure)
        for effect in effects:
            assert isinstance(effect, BeginClose)
            await self._close(effect.reason, effect.agent_exit)

    async def _close(self, reason: CloseReason, agent_exit: AgentExit | None) -> None:
        if self._closing:
            await self._closed.wait()
            return
        self._closing = True
        with anyio.CancelScope(shield=True):
            for effect in self._protocol.begin_close(agent_exit):
                if isinstance(effect, AbortTurn):
                    await self._abort(effect.turn)
                else:
                    self._carry_out([effect])
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
            self._protocol.finish_close(reason, result, agent_exit)
            self._queue.close()
            self._closed.set()

    # ------------------------------------------------------------ turns

    async def _run_turn(self, turn: Turn, task: _TurnTask) -> None:
        result: TurnResult | None = None
        error: AgentError | None = None
        with task.scope:
            try:
                if task.after is not None:
                    await task.after.wait()
                telemetry = self._telemetry
                with attach(telemetry.turn_context(turn.turn_id) if telemetry else None):
                    result = await self.adapter.prompt(turn)
            except Exception as exc:
                error = self._failure(exc, "adapter prompt raised", turn_id=turn.turn_id)
        self._carry_out(self._protocol.turn_finished(turn.turn_id, result, error))

    async def _abort(self, turn: Turn) -> None:
        task = self._turns.get(turn.turn_id)
        if task is None:
            return
        with anyio.move_on_after(self.options.abort_grace):
            try:
                await self.adapter.abort(turn)
            except Exception:
                self._log.exception("adapter abort raised")
            await task.ended.wait()
        if not task.ended.is_set():
            self._log.warning(
                "turn did not end after abort; ending it",
                turn_id=turn.turn_id,
                grace=self.options.abort_grace,
            )
            # The turn's task ends it when it unwinds; if it cannot run (an adapter
            # that shields its prompt), ending it here keeps the pairing exact.
            self._carry_out(self._protocol.force_turn_end(turn.turn_id, None, "cancelled"))

    # ------------------------------------------------------------ other operations

    async def _compact(self, custom_instructions: str | None, after: anyio.Event | None) -> None:
        try:
            if after is not None:
                await after.wait()
            await self._operation(self.adapter.compact(custom_instructions))
        finally:
            self._protocol.compaction_finished()

    async def _configure(
        self, request: Configuration, after: anyio.Event | None, done: anyio.Event
    ) -> None:
        """Configuration requests run in the order they were sent, each before what was
        sent after it; the answer frame comes once the adapter has done it."""
        try:
            if after is not None:
                await after.wait()
            answered, answer = await self._operation(self._configuration(request))
            if answered:
                self._protocol.configured(request, answer)
        finally:
            done.set()

    def _configuration(self, request: Configuration) -> Coroutine[Any, Any, object]:
        adapter = self.adapter
        match request:
            case ModeSwitch():
                return adapter.switch_mode(request.mode)
            case ToolCatalogPublish():
                return adapter.publish_tools(request.tools)
            case ModelSet():
                return adapter.set_model(request)
            case ModelListRequest():
                return adapter.list_models()
            case PlanSet():
                return adapter.set_plan(request.entries)

    async def _steer(
        self, turn: Turn, message: PromptSteer, after: anyio.Event | None, done: anyio.Event
    ) -> None:
        try:
            if after is not None:
                await after.wait()
            if self._protocol.turn_running(turn.turn_id):
                await self._operation(self.adapter.steer(turn, message))
        finally:
            done.set()

    async def _operation(self, operation: Coroutine[Any, Any, object]) -> tuple[bool, object]:
        """Run an adapter operation; its failure becomes the frame the Master sees.
        Returns whether it succeeded, and its answer."""
        try:
            return True, await operation
        except UnsupportedOperation as exc:
            self._protocol.operation_failed(None, str(exc))
        except OperationRejected as exc:
            self._protocol.session_error(SessionErrorCode.REJECTED, str(exc))
        except Exception as exc:
            self._protocol.operation_failed(self._failure(exc, "adapter operation raised"), None)
        return False, None

    async def _call_host_tool(
        self, call: HostToolCall, on_progress: Progress | None
    ) -> HostToolOutcome:
        protocol = self._protocol
        call = protocol.distinct_host_call(call)
        refused = protocol.host_call_refusal(call)
        if refused is not None:
            return refused
        if call.permission:
            question = Question.permission(
                call.tool_name,
                tool_input=call.input,
                tool_call_id=call.invocation_id,
                turn_id=call.turn_id,
            )
            if not (await self._interact(question)).allowed:
                return protocol.host_call_denied(call)
        opened = protocol.open_host_call(call)
        if isinstance(opened, HostToolOutcome):
            return opened
        waiter = self._host_waiters[call.invocation_id] = _HostCallWaiter()
        try:
            with anyio.move_on_after((opened.timeout_ms or 0) / 1000):
                while waiter.outcome is None:
                    await waiter.changed.wait()
                    waiter.changed = anyio.Event()
                    progress, waiter.progress = waiter.progress, []
                    if on_progress is not None:
                        for output in progress:
                            await on_progress(output)
            if waiter.outcome is None:
                self._carry_out(protocol.host_call_deadline(call.invocation_id))
        finally:
            if waiter.outcome is None:  # the adapter's call was cancelled
                self._carry_out(protocol.host_call_abandoned(call.invocation_id))
            del self._host_waiters[call.invocation_id]
        assert waiter.outcome is not None
        return waiter.outcome

    def _failure(
        self,
        exc: Exception,
        event: str,
        code: AgentErrorCode = AgentErrorCode.AGENT_ERROR,
        **log_fields: Any,
    ) -> AgentError:
        """The one place an adapter's exception becomes the frame the Master sees:
        an :class:`AgentFailure` carries its own; anything else is a bug, logged with
        its traceback and reported under ``code``."""
        if isinstance(exc, AgentFailure):
            return exc.error
        self._log.exception(event, **log_fields)
        severity = "fatal" if code == AgentErrorCode.SPAWN_FAILED else "error"
        return AgentError(
            severity=severity, error_code=code, message=f"{type(exc).__name__}: {exc}"
        )

    def _behind(self) -> bool:
        """Whether the Master is a whole ``frame_buffer`` behind; then the protocol
        counts its answers, summed up as soon as the Master has caught up."""
        if not self._queue.full:
            return False
        if not self._catching_up:
            self._catching_up = True
            self._spawn(self._sum_up_when_caught_up)
        return True

    async def _sum_up_when_caught_up(self) -> None:
        await self._queue.wait_for_room()
        self._catching_up = False
        self._protocol.put_unanswered_summary()

    # ------------------------------------------------------------ adapter side

    async def _emit(self, payload: ClientPayload) -> None:
        self._protocol.emit(payload)
        if self._queue.full:  # the hot path skips the await when there is room
            await self._queue.wait_for_room()

    async def _emit_many(self, payloads: Iterable[ClientPayload]) -> None:
        self._protocol.emit_many(payloads)
        if self._queue.full:
            await self._queue.wait_for_room()

    async def _interact(self, question: Question) -> InteractionOutcome:
        protocol = self._protocol
        opened = protocol.open_interaction(question)
        if isinstance(opened, InteractionOutcome):
            return opened
        interaction_id = opened.interaction_id
        deadline = anyio.current_time() + opened.timeout_ms / 1000
        waiter = self._waiters[interaction_id] = _Waiter(deadline)
        self._watch_deadline(deadline)
        try:
            await waiter.done.wait()
        finally:
            if waiter.outcome is None:  # the adapter's call was cancelled
                self._carry_out(protocol.interaction_abandoned(interaction_id))
            del self._waiters[interaction_id]
        assert waiter.outcome is not None
        return waiter.outcome

    def _watch_deadline(self, deadline: float) -> None:
        """Have the deadline keeper wake by ``deadline``; it starts with the first question."""
        sleep = self._deadline_sleep
        if sleep is None:
            sleep = self._deadline_sleep = anyio.CancelScope(deadline=deadline)
            self._spawn(self._keep_deadlines, sleep, name="interaction deadlines")
        elif deadline < sleep.deadline:
            sleep.deadline = deadline

    async def _keep_deadlines(self, sleep: anyio.CancelScope) -> None:
        """Deny each question whose deadline passed. One task for the session's questions
        rather than a timer per question: a question answered in time costs a comparison,
        and no timer is left behind for the event loop (and the GC) to clear later."""
        while True:
            with sleep:
                await anyio.sleep_forever()
            now = anyio.current_time()
            expired = [
                interaction_id
                for interaction_id, waiter in self._waiters.items()
                if waiter.outcome is None and waiter.deadline <= now
            ]
            for interaction_id in expired:
                self._carry_out(self._protocol.interaction_deadline(interaction_id))
            earliest = min(
                (waiter.deadline for waiter in self._waiters.values() if waiter.outcome is None),
                default=math.inf,
            )
            sleep = self._deadline_sleep = anyio.CancelScope(deadline=earliest)


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

    @property
    def interaction_timeout_ms(self) -> int:
        return self._session.options.interaction_timeout_ms

    async def emit(self, payload: ClientPayload) -> None:
        await self._session._emit(payload)

    async def emit_many(self, payloads: Iterable[ClientPayload]) -> None:
        await self._session._emit_many(payloads)

    async def interact(self, question: Question) -> InteractionOutcome:
        return await self._session._interact(question)

    async def call_host_tool(
        self, call: HostToolCall, on_progress: Progress | None = None
    ) -> HostToolOutcome:
        return await self._session._call_host_tool(call, on_progress)

    def agent_exited(self, exit: AgentExit) -> None:
        session = self._session
        session._carry_out(session._protocol.agent_exited(exit))

    def start_soon(
        self, func: Callable[[], Coroutine[Any, Any, object]], *, name: str | None = None
    ) -> None:
        self._session._spawn(func, name=name)


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
    the session is closed explicitly unless it already is. That holds when the caller
    is cancelled too: the session's own tasks are out of the cancellation's reach
    until the close has aborted the turn and stopped the agent.
    """
    path = Path(workspace)
    if not path.is_absolute() or not await anyio.Path(path).is_dir():
        raise WorkspaceError(f"workspace must be an existing absolute directory: {workspace}")
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
            session._stop_tasks()
