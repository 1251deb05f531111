"""The Codex adapter: ``codex app-server`` over stdio, as a ``process`` agent."""

from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, ClassVar

import anyio
import anyio.to_thread
from pydantic import ValidationError

from rawp_adapter_codex._mcp import McpStartup
from rawp_adapter_codex._models import ModelChoice
from rawp_adapter_codex._rpc import (
    CodexRequestError,
    Connection,
    Incoming,
    LineTooLong,
    Notification,
    ServerRequest,
    Unreadable,
)
from rawp_adapter_codex._settings import CodexSettings
from rawp_adapter_codex._translate import (
    APPROVALS,
    Translator,
    answer,
    decision,
    stop_reason,
    turn_usage,
)
from rawp_adapter_codex._wire import (
    ErrorNotification,
    InitializeResponse,
    McpServerStatusNotification,
    Model,
    ModelListResponse,
    ThreadStartResponse,
    TokenUsageBreakdown,
    TokenUsageNotification,
    TurnInfo,
    TurnNotification,
    TurnStartResponse,
)
from rawp_adapters import (
    Adapter,
    AdapterSettings,
    AgentExit,
    AgentFailure,
    CloseResult,
    ModelState,
    OperationRejected,
    Question,
    SessionContext,
    StartFailed,
    Turn,
    TurnResult,
    UnsupportedOperation,
    mcp_server_refused,
)
from rawp_adapters.frames import (
    AgentError,
    AgentInfo,
    Features,
    ModelInfo,
    ModelSet,
    PromptSteer,
    SessionCompacted,
    StopReason,
)
from rawp_adapters.processes import (
    SESSION_ID_VAR,
    AgentProcess,
    ExitStatus,
    agent_environment,
    check_workspace,
    exit_status,
)

try:
    _VERSION = version("rawp-adapter-codex")
except PackageNotFoundError:  # pragma: no cover - run from a source tree
    _VERSION = "0"

CLIENT_NAME = "rawp-adapter-codex"
_USER_AGENT_VERSION = re.compile(r"^[^/\s]+/(\S+)")
_EXIT_WAIT = 2.0
"""Seconds a start failure waits for the app-server's own exit, to report it."""
MCP_STATUS = "mcpServer/startupStatus/updated"
_ANSWER_BOUND = 2.0
"""Seconds a turn's end spends declining the approvals still open (a stuck pipe)."""
_TREE_INTERVAL = 0.5
"""Seconds between records of the app-server's process tree while a turn runs."""


@dataclass
class _TurnState:
    turn: Turn
    translator: Translator
    usage_before: TokenUsageBreakdown | None
    codex_turn_id: str | None = None
    started: anyio.Event = field(default_factory=anyio.Event)
    ended: anyio.Event = field(default_factory=anyio.Event)
    status: str | None = None
    error: str | None = None
    aborting: bool = False
    pending: dict[int | str, str] = field(default_factory=dict)
    """Approval requests waiting for the Master (their method by request id)."""

    def know(self, codex_turn_id: str) -> None:
        if self.codex_turn_id is None:
            self.codex_turn_id = codex_turn_id
            self.started.set()

    def concerns(self, params: dict[str, Any]) -> bool:
        """A notification is about this turn (codex names its turn in each)."""
        turn_id = params.get("turnId")
        if turn_id is None:
            turn = params.get("turn")
            turn_id = turn.get("id") if isinstance(turn, dict) else None
        return turn_id is None or turn_id == self.codex_turn_id


@dataclass
class _Compaction:
    """A manual compaction: codex runs it as a turn of its own."""

    codex_turn_id: str | None = None
    ended: anyio.Event = field(default_factory=anyio.Event)
    status: str | None = None
    error: str | None = None


class CodexAdapter(Adapter[CodexSettings]):
    """Runs ``codex app-server`` (``adapter_type: "process"``, ``settings.protocol: "codex"``)."""

    adapter_type: ClassVar[str] = "process"
    settings_model: ClassVar[type[AdapterSettings]] = CodexSettings

    def __init__(self, settings: CodexSettings) -> None:
        if not isinstance(settings, CodexSettings):
            raise TypeError(f"CodexAdapter needs CodexSettings, not {type(settings).__name__}")
        super().__init__(settings)
        self._ctx: SessionContext | None = None
        self._process: AgentProcess | None = None
        self._connection: Connection | None = None
        self._own_home: Path | None = None
        self._thread_id: str | None = None
        self._codex_version: str | None = None
        self._models = ModelChoice(
            settings.model, settings.reasoning_effort, next_effort=settings.reasoning_effort
        )
        self._mcp = McpStartup([server.name for server in settings.mcp_servers])
        self._usage: TokenUsageBreakdown | None = None
        self._context_tokens: int | None = None
        """The last model request's size: how full the context is."""
        self._turn: _TurnState | None = None
        self._compaction: _Compaction | None = None
        self._closing = False
        self._closed: CloseResult | None = None
        self._exit: ExitStatus | None = None

    # ------------------------------------------------------------ what it is

    @property
    def thread_id(self) -> str | None:
        """The codex thread (give it as ``resume_thread_id``, with the same
        ``codex_home``, to resume it)."""
        return self._thread_id

    @property
    def features(self) -> Features:
        process = self._process
        return Features(
            adapter_type=self.adapter_type,
            context_compaction=True,
            thinking=True,
            tool_events=True,
            permission_requests=True,
            abort=True,
            steering=True,
            model_change=True,
            model_list=bool(self._models.listed),
            thinking_change=True,
            plans=True,
            mcp_servers=self._mcp.started(),
            process_containment=process.containment if process is not None else None,
        )

    @property
    def agent_info(self) -> AgentInfo:
        return AgentInfo(
            name=self.settings.agent_name,
            version=self._codex_version,
            model=self._models.model,
            thinking_level=self._models.effort,
        )

    @property
    def notices(self) -> list[str]:
        return self.settings.env_notices()

    # ------------------------------------------------------------ start

    async def start(self, ctx: SessionContext) -> None:
        self._ctx = ctx
        log = ctx.log.bind(adapter="codex")
        settings = self.settings
        workspace = check_workspace(ctx.workspace)
        env = agent_environment(settings, session_id=ctx.session_id, workspace=workspace)
        if settings.codex_home is not None:
            home = Path(settings.codex_home)
            await anyio.Path(home).mkdir(parents=True, exist_ok=True)
        else:
            home = self._own_home = Path(
                await anyio.to_thread.run_sync(lambda: tempfile.mkdtemp(prefix="rawp-codex-home-"))
            )
        env["CODEX_HOME"] = str(home)
        argv = settings.argv()
        try:
            process = await AgentProcess.spawn(
                argv,
                cwd=workspace,
                env=env,
                marker=(SESSION_ID_VAR, ctx.session_id),
                stderr_tail_bytes=settings.stderr_tail_bytes,
                log=log,
            )
        except OSError as exc:
            self._remove_home()
            raise StartFailed.of(f"cannot start {argv[0]!r}: {exc}") from exc
        self._process = process
        connection = self._connection = Connection(process, log, settings.max_line_bytes)
        ctx.start_soon(process.drain_stderr, name="codex stderr")
        ctx.start_soon(connection.read, name="codex reader")
        ctx.start_soon(self._watch_exit, name="codex exit")
        ctx.start_soon(self._pump, name="codex pump")
        ctx.start_soon(
            lambda: process.watch_tree(_TREE_INTERVAL, lambda: self._turn is not None),
            name="codex tree",
        )
        try:
            await process.start_guard()
            await self._handshake(connection, workspace)
        except Exception as exc:
            await self._fail_start(exc)
        log.info("codex thread ready", thread_id=self._thread_id, model=self._models.model)
        with anyio.move_on_after(settings.start_timeout):
            await self._mcp.settled.wait()
        for name, reason in self._mcp.refused().items():
            await ctx.emit(mcp_server_refused(name, reason))

    async def _handshake(self, connection: Connection, workspace: Path) -> None:
        settings = self.settings
        timeout = settings.start_timeout
        init = InitializeResponse.model_validate(
            await connection.request(
                "initialize",
                {"clientInfo": {"name": CLIENT_NAME, "version": _VERSION}},
                timeout,
            )
        )
        match = _USER_AGENT_VERSION.match(init.user_agent)
        self._codex_version = match.group(1) if match else None
        await connection.notify("initialized")
        params: dict[str, Any] = {
            "cwd": str(workspace),
            "approvalPolicy": settings.approval_policy,
            "sandbox": settings.sandbox,
        }
        if settings.model is not None:
            params["model"] = settings.model
        if settings.resume_thread_id is not None:
            method = "thread/resume"
            params["threadId"] = settings.resume_thread_id
        else:
            method = "thread/start"
        thread = ThreadStartResponse.model_validate(
            await connection.request(method, params, timeout)
        )
        self._thread_id = thread.thread.id
        models = self._models
        models.model = thread.model
        models.effort = models.effort or thread.reasoning_effort
        models.listed = await self._list_models(connection)

    async def _list_models(self, connection: Connection) -> list[Model]:
        """Every visible model of ``model/list`` (its pages); none when it fails."""
        models: list[Model] = []
        cursor: str | None = None
        try:
            while True:
                params = {} if cursor is None else {"cursor": cursor}
                page = ModelListResponse.model_validate(
                    await connection.request("model/list", params, self.settings.request_timeout)
                )
                models += [m for m in page.data if not m.hidden]
                cursor = page.next_cursor
                if cursor is None:
                    return models
        except (CodexRequestError, ValidationError, TimeoutError) as exc:
            assert self._ctx is not None
            self._ctx.log.info("codex lists no models", error=str(exc))
            return []

    async def _fail_start(self, exc: Exception) -> None:
        process = self._process
        assert process is not None
        ended: ExitStatus | None = None
        if not isinstance(exc, TimeoutError):
            with anyio.move_on_after(_EXIT_WAIT):
                ended = exit_status(await process.wait())
                await process.stderr_ended()
        tail = process.stderr_tail()
        self._closed = await self._shutdown()
        what = "resume the thread" if self.settings.resume_thread_id else "start the app-server"
        command = self.settings.command[0]
        if ended is not None:
            raise StartFailed.of(
                f"cannot {what} {command!r}: it {ended.describe()} before it was ready",
                exit_code=ended.exit_code,
                signal=ended.signal,
                stderr_tail=tail,
            ) from exc
        raise StartFailed.of(
            f"cannot {what} {command!r}: {exc or type(exc).__name__}", stderr_tail=tail
        ) from exc

    async def _watch_exit(self) -> None:
        process = self._process
        assert process is not None
        status = exit_status(await process.wait())
        await process.stderr_ended()
        self._exit = status
        if not self._closing and self._ctx is not None:
            # the session ends the open turn with this error, then cancels prompt()
            self._ctx.agent_exited(
                AgentExit(
                    exit_code=status.exit_code,
                    signal=status.signal,
                    error=status.error(stderr_tail=process.stderr_tail()),
                )
            )

    # ------------------------------------------------------------ the app-server's messages

    async def _pump(self) -> None:
        assert self._connection is not None
        assert self._ctx is not None
        ctx = self._ctx
        async with self._connection.incoming:
            async for message in self._connection.incoming:
                try:
                    await self._handle(ctx, message)
                except ValidationError as exc:
                    method = getattr(message, "method", "?")
                    await ctx.emit(_protocol_error(f"cannot read the app-server's {method}: {exc}"))
                except Exception:  # never lose the pump over one message
                    ctx.log.exception(
                        "cannot translate a codex message", message=repr(message)[:300]
                    )

    async def _handle(self, ctx: SessionContext, message: Incoming) -> None:
        if isinstance(message, LineTooLong):
            await ctx.emit(
                AgentError(
                    severity="warning",
                    error_code="FRAME_TOO_LARGE",
                    message=f"the app-server wrote a {message.size}-byte line; it was skipped",
                )
            )
        elif isinstance(message, Unreadable):
            await ctx.emit(
                _protocol_error(
                    f"the app-server wrote a line that is not a JSON object: {message.line!r}"
                )
            )
        elif isinstance(message, ServerRequest):
            await self._server_request(ctx, message)
        else:
            await self._notification(ctx, message)

    async def _notification(self, ctx: SessionContext, note: Notification) -> None:
        method, params = note.method, note.params
        if method == "thread/tokenUsage/updated":
            usage = TokenUsageNotification.model_validate(params).token_usage
            self._usage = usage.total
            self._context_tokens = usage.last.total_tokens
            return
        if method == MCP_STATUS:
            self._mcp.update(McpServerStatusNotification.model_validate(params))
            return
        turn = self._turn
        if turn is None:
            if self._compaction is not None and method in ("turn/started", "turn/completed"):
                self._compaction_turn(method, TurnNotification.model_validate(params).turn)
            else:
                ctx.log.debug("codex message outside a turn", method=method)
            return
        if method == "turn/started":
            turn.know(TurnNotification.model_validate(params).turn.id)
        if not turn.concerns(params):
            ctx.log.debug("codex message of another turn", method=method)
            return
        if method == "turn/completed":
            ended = TurnNotification.model_validate(params).turn
            turn.status = ended.status
            if ended.error is not None:
                turn.error = turn.error or ended.error.message
            await ctx.emit_many(turn.translator.finish())
            turn.ended.set()
        elif method == "error":
            error = ErrorNotification.model_validate(params)
            if error.will_retry:
                await ctx.emit(
                    AgentError(
                        severity="warning", error_code="AGENT_ERROR", message=error.error.message
                    )
                )
            else:
                turn.error = error.error.message
        else:
            await ctx.emit_many(turn.translator.notification(method, params))

    def _compaction_turn(self, method: str, turn: TurnInfo) -> None:
        compaction = self._compaction
        assert compaction is not None
        if method == "turn/started":
            compaction.codex_turn_id = compaction.codex_turn_id or turn.id
        elif compaction.codex_turn_id in (None, turn.id):
            compaction.status = turn.status
            compaction.error = turn.error.message if turn.error is not None else None
            compaction.ended.set()

    async def _server_request(self, ctx: SessionContext, request: ServerRequest) -> None:
        assert self._connection is not None
        turn = self._turn
        if request.method not in APPROVALS:
            await self._connection.refuse(
                request.id, f"{CLIENT_NAME} does not answer {request.method}"
            )
            return
        asked = None
        if turn is not None and not turn.aborting and turn.concerns(request.params):
            asked = turn.translator.approval(
                request.method, request.params, timeout_ms=self.settings.interaction_timeout_ms
            )
        if turn is None or asked is None:
            await self._connection.respond(request.id, answer(request.method, "decline"))
            return
        frames, question = asked
        await ctx.emit_many(frames)
        turn.pending[request.id] = request.method
        ctx.start_soon(lambda: self._ask(ctx, turn, request, question), name="codex approval")

    async def _ask(
        self, ctx: SessionContext, turn: _TurnState, request: ServerRequest, question: Question
    ) -> None:
        outcome = await ctx.interact(question)
        method = turn.pending.pop(request.id, None)
        if method is None:
            return  # answered by the abort or the turn's end
        await self._answer(request.id, answer(method, decision(outcome, aborting=turn.aborting)))

    async def _decline_pending(self, state: _TurnState) -> None:
        """Decline every approval of ``state`` still waiting for the Master."""
        while state.pending:
            request_id, method = state.pending.popitem()
            await self._answer(request_id, answer(method, "decline"))

    async def _answer(self, request_id: int | str, response: dict[str, Any]) -> None:
        assert self._connection is not None
        try:
            await self._connection.respond(request_id, response)
        except ConnectionError as exc:
            assert self._ctx is not None
            self._ctx.log.info("cannot answer an approval", error=str(exc))

    # ------------------------------------------------------------ turns

    def _request_failure(self, method: str, exc: Exception) -> AgentFailure:
        if isinstance(exc, ConnectionError):
            return AgentFailure.of(f"the app-server went away: {exc}")
        return AgentFailure.of(f"the app-server refused {method}: {exc}")

    async def prompt(self, turn: Turn) -> TurnResult:
        assert self._connection is not None
        state = _TurnState(turn, Translator(turn.turn_id), usage_before=self._usage)
        self._turn = state
        params: dict[str, Any] = {
            "threadId": self._thread_id,
            "input": [{"type": "text", "text": turn.text}],
            **self._models.turn_params(),
        }
        try:
            try:
                started = TurnStartResponse.model_validate(
                    await self._connection.request(
                        "turn/start", params, self.settings.request_timeout
                    )
                )
            except (CodexRequestError, ConnectionError, TimeoutError) as exc:
                raise self._request_failure("turn/start", exc) from exc
            self._models.turn_started()
            state.know(started.turn.id)
            await state.ended.wait()
        finally:
            self._turn = None
            with anyio.CancelScope(shield=True), anyio.move_on_after(_ANSWER_BOUND):
                await self._decline_pending(state)
        usage = turn_usage(state.usage_before, self._usage)
        assert state.status is not None  # set with ended, at the turn's turn/completed
        stop: StopReason | None = "cancelled" if state.aborting else stop_reason(state.status)
        if stop is None:
            message = state.error or f"the turn ended {state.status}"
            raise AgentFailure.of(f"the turn failed: {message}")
        return TurnResult(stop_reason=stop, usage=usage)

    async def _codex_turn(self, state: _TurnState) -> str:
        """The codex id of a running turn (``turn/start`` may not have answered yet)."""
        with anyio.fail_after(self.settings.request_timeout):
            await state.started.wait()
        assert state.codex_turn_id is not None
        return state.codex_turn_id

    async def steer(self, turn: Turn, message: PromptSteer) -> None:
        if message.delivery != "steer":
            raise UnsupportedOperation("codex takes messages into the running turn only (steer)")
        state = self._turn
        if state is None or state.turn.turn_id != turn.turn_id or self._connection is None:
            raise OperationRejected("no running turn to steer")
        params = {
            "threadId": self._thread_id,
            "expectedTurnId": await self._codex_turn(state),
            "input": [{"type": "text", "text": message.text}],
        }
        try:
            await self._connection.request("turn/steer", params, self.settings.request_timeout)
        except (CodexRequestError, ConnectionError, TimeoutError) as exc:
            raise OperationRejected(f"the app-server refused turn/steer: {exc}") from exc

    async def abort(self, turn: Turn) -> None:
        state = self._turn
        if state is None or state.turn.turn_id != turn.turn_id or self._connection is None:
            return
        state.aborting = True
        await self._decline_pending(state)
        try:
            params = {"threadId": self._thread_id, "turnId": await self._codex_turn(state)}
            await self._connection.request("turn/interrupt", params, self.settings.request_timeout)
        except (CodexRequestError, ConnectionError, TimeoutError) as exc:
            assert self._ctx is not None
            self._ctx.log.info("cannot interrupt the turn", error=str(exc))

    async def compact(self, custom_instructions: str | None) -> None:
        """``thread/compact/start``: codex summarises the thread in a turn of its own."""
        if custom_instructions:
            raise OperationRejected("codex compacts with its own instructions (it takes none)")
        assert self._connection is not None
        assert self._ctx is not None
        compaction = self._compaction = _Compaction()
        tokens_before = self._context_tokens
        try:
            await self._connection.request(
                "thread/compact/start", {"threadId": self._thread_id}, self.settings.request_timeout
            )
            with anyio.fail_after(self.settings.compact_timeout):
                await compaction.ended.wait()
        except (CodexRequestError, ConnectionError) as exc:
            raise AgentFailure.of(f"codex could not compact the thread: {exc}") from exc
        except TimeoutError:
            raise AgentFailure.of(
                f"the compaction did not end within {self.settings.compact_timeout:g} s"
            ) from None
        finally:
            self._compaction = None
        if compaction.status != "completed":
            raise AgentFailure.of(
                f"the compaction ended {compaction.status}: {compaction.error or 'no detail'}"
            )
        await self._ctx.emit(SessionCompacted(trigger="manual", tokens_before=tokens_before))

    # ------------------------------------------------------------ model and reasoning effort

    async def list_models(self) -> list[ModelInfo]:
        if not self._models.listed:
            raise UnsupportedOperation("the app-server lists no models")
        return self._models.infos()

    async def set_model(self, change: ModelSet) -> ModelState:
        """Taken by the next ``turn/start`` (:class:`ModelChoice`)."""
        return self._models.change(change)

    # ------------------------------------------------------------ the end

    def _remove_home(self) -> None:
        if self._own_home is not None:
            home, self._own_home = self._own_home, None
            shutil.rmtree(home, ignore_errors=True)

    async def _shutdown(self) -> CloseResult:
        self._closing = True
        status: ExitStatus | None = None
        with anyio.CancelScope(shield=True):
            process, self._process = self._process, None
            if process is not None:
                status = await process.terminate(
                    stdin_grace=self.settings.stdin_close_grace,
                    sigterm_grace=self.settings.sigterm_grace,
                )
                await process.release()
            self._remove_home()
        status = status or self._exit
        if status is None:
            return CloseResult()
        return CloseResult(exit_code=status.exit_code, signal=status.signal)

    async def close(self) -> CloseResult:
        if self._closed is None:
            self._closed = await self._shutdown()
        return self._closed


def _protocol_error(message: str) -> AgentError:
    """A message of the app-server's that cannot be read: skipped, the session goes on."""
    return AgentError(severity="warning", error_code="PROTOCOL_ERROR", message=message)
