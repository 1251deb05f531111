"""One long-lived agent in ``--mode rpc``: the I/O around the sans-IO translator.

Background tasks (started in the session's task group): the stdout reader, the stderr
drain, the exit watcher, the process-tree recorder and the dialog refuser. The reader
never waits for the Master's answers: each dialog runs in a task of its own, so the
agent's stream keeps flowing while a permission request is open. At most
:data:`MAX_OPEN_DIALOGS` are open at once; the agent's further dialogs are refused at
once (one warning says so), so a flood of dialogs costs bounded memory.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from rawp_adapter_process._commands import AgentGone, CommandChannel
from rawp_adapter_process._dialogs import Dialog, interpret
from rawp_adapter_process._host_tools import HostTools
from rawp_adapter_process._launch import agent_env, agent_name, rpc_argv
from rawp_adapter_process._live import LiveControl
from rawp_adapter_process._mcp import MCP_AGENT, loaded, remove_config_dir, write_config_dir
from rawp_adapter_process._reader import MessageReader
from rawp_adapter_process._settings import ProcessSettings
from rawp_adapter_process._translate import (
    SIGNALS,
    RetriesEnded,
    RunEnded,
    Signal,
    Translator,
    TurnOutcome,
)
from rawp_adapter_process._version import agent_version, probes_version, remember_version
from rawp_adapter_process._wire import (
    HostToolCallRequest,
    HostToolCancel,
    MessageUpdate,
    Ready,
    Response,
    UiRequest,
    WireMessage,
    decode_compaction,
    decode_state,
    nothing_to_compact,
)
from rawp_adapters import (
    AgentExit,
    AgentFailure,
    CloseResult,
    GuardError,
    InteractionOutcome,
    SessionContext,
    StartFailed,
    Turn,
    TurnResult,
)
from rawp_adapters.frames import (
    AgentError,
    ClientPayload,
    Containment,
    SessionCompacted,
    TokenUsage,
)
from rawp_adapters.processes import (
    SESSION_ID_VAR,
    AgentProcess,
    AgentWriteError,
    ExitStatus,
    check_workspace,
    exit_status,
)

_STDOUT_DRAIN = 2.0
"""Seconds without a new line after which the rest of stdout is given up once the agent
has exited (a slow host may still be taking the lines before)."""
_DIALOG_DENY_BOUND = 1.0
"""Seconds close() spends answering open dialogs of an agent that may not read stdin."""
_IDLE_POLL_FIRST, _IDLE_POLL_MAX = 0.05, 1.0
"""Backoff of ``get_state`` polls while the agent still says it is streaming."""
MAX_OPEN_DIALOGS = 64
"""Dialogs of the agent open at once; more are refused without asking the Master."""
_QUEUED_REFUSALS = 1024
"""Refusals waiting to be written (an agent that floods dialogs may not read its stdin);
beyond them a dialog is dropped unanswered."""
_VERSION_GRACE = 2.0
"""Seconds ``<command> --version`` (where it is asked) may still take once the agent is
ready (it runs while the agent starts); then the version is reported as unknown."""
_MCP_POLL = 0.2
"""Seconds between ``get_state`` asks while omp still loads MCP servers' tools."""
_CONTROL = (Response, UiRequest, Ready, HostToolCallRequest, HostToolCancel)
_CONTROL_TYPES = frozenset(_CONTROL)
_GATE_PASSED = InteractionOutcome("allow", "answered")
"""How the agent's own gate is passed for a call the Master is not asked about here: a
host tool's (a ``write`` to ``xd://<host tool>`` included: the runtime asks the Master
under the host tool's name), or a tool ``permission_tools`` leaves ungated."""


class _TurnState:
    """The running prompt, as the reader and :meth:`RpcAgent.prompt` share it."""

    __slots__ = ("abort_answered", "aborting", "failure", "run_ends", "turn", "wakeup")

    def __init__(self, turn: Turn) -> None:
        self.turn = turn
        self.run_ends: deque[RunEnded] = deque()
        self.failure: str | None = None
        self.aborting = False
        self.abort_answered = False
        self.wakeup = anyio.Event()

    def wake(self) -> None:
        self.wakeup.set()

    def on_late_answer(self, response: Response) -> None:
        if not response.success and self.failure is None:
            self.failure = f"the agent could not run the prompt: {response.error}"
            self.wake()


class _OpenDialog:
    __slots__ = ("answered", "dialog", "scope")

    def __init__(self, dialog: Dialog) -> None:
        self.dialog = dialog
        self.scope = anyio.CancelScope()
        self.answered = False


class RpcAgent:
    def __init__(self, settings: ProcessSettings, ctx: SessionContext) -> None:
        self._settings = settings
        self._ctx = ctx
        self._log = ctx.log.bind(adapter="process")
        own = settings.interaction_timeout_ms
        self._dialog_timeout_ms = ctx.interaction_timeout_ms if own is None else own
        self._process: AgentProcess | None = None
        self._channel = CommandChannel(self._write)
        self._translator = Translator()
        self.live = LiveControl(self._channel, settings.command_timeout)
        self.host_tools = HostTools(
            settings, ctx, self._channel, self._translator, self._background
        )
        self._turn: _TurnState | None = None
        self._dialogs: dict[str, _OpenDialog] = {}
        self._refusals, self._to_refuse = anyio.create_memory_object_stream[dict[str, Any]](
            _QUEUED_REFUSALS
        )
        self._dialogs_refused = 0
        self._ready = False
        self._ready_or_gone = anyio.Event()
        self._reader: MessageReader | None = None
        self._exited = anyio.Event()
        self._exit: ExitStatus | None = None
        self._closing = False
        self._aborted_last = False
        """The last turn was aborted: a run the agent starts now is that prompt's, late."""
        self._guard_error: GuardError | None = None
        self.version: str | None = None
        """The agent's version: its ``ready`` frame's, else what ``--version`` says."""
        self._mcp_dir: Path | None = None
        self.mcp_refused: dict[str, str] = {}
        """The session's MCP servers the agent did not get, and why (after :meth:`start`)."""

    # ------------------------------------------------------------ start

    @property
    def containment(self) -> Containment | None:
        """How the agent's processes are kept from outliving the session, once spawned."""
        return self._process.containment if self._process is not None else None

    async def start(self) -> None:
        settings, ctx = self._settings, self._ctx
        workspace = check_workspace(ctx.workspace)
        servers = settings.mcp_servers
        if servers and agent_name(settings) == MCP_AGENT:
            self._mcp_dir = await anyio.to_thread.run_sync(write_config_dir, servers)
        else:
            why = f"{agent_name(settings)} takes no MCP servers over RPC (only omp does)"
            self.mcp_refused = {server.name: why for server in servers}
        argv = rpc_argv(settings, self._mcp_dir)
        env = agent_env(
            settings,
            session_id=ctx.session_id,
            workspace=workspace,
            dialog_timeout_ms=self._dialog_timeout_ms,
        )
        try:
            process = await AgentProcess.spawn(
                argv,
                cwd=workspace,
                env=env,
                marker=(SESSION_ID_VAR, ctx.session_id),
                stderr_tail_bytes=settings.stderr_tail_bytes,
                log=self._log,
            )
        except OSError as exc:
            raise StartFailed.of(f"cannot start the agent {argv[0]!r}: {exc}") from exc
        self._process = process
        self._log = self._log.bind(pid=process.pid)
        self._log.info("agent started", argv=argv)
        self._reader = MessageReader(
            process.stdout,
            max_line_bytes=settings.max_line_bytes,
            on_messages=self._on_messages,
            on_error=ctx.emit,
            log=self._log,
        )
        self._background(self._reader.run, "read stdout")
        self._background(process.drain_stderr, "drain stderr")
        self._background(self._refuse_dialogs, "refuse dialogs")
        self._background(self._watch_exit, "watch exit")
        self._background(
            lambda: process.watch_tree(
                settings.descendant_poll_interval, busy=lambda: self._turn is not None
            ),
            "record tree",
        )
        if settings.ready_probe != "ready-frame":
            self._background(self._probe_state, "ready probe")
        asking = anyio.CancelScope()
        async with anyio.create_task_group() as tg:
            # The guard starts and the version is asked while the agent gets ready: the
            # session's start waits for the slowest, not for each in turn.
            tg.start_soon(self._start_guard, process)
            if probes_version(settings):
                tg.start_soon(self._ask_version, asking, env, workspace)
            with anyio.move_on_after(settings.ready_timeout):
                await self._ready_or_gone.wait()
            if self._ready and self.version is None:
                asking.deadline = anyio.current_time() + _VERSION_GRACE
            else:
                if self.version is not None:  # named by the ready frame: no need to ask
                    remember_version(settings.command, self.version)
                asking.cancel()  # named by the ready frame, or no session at all
        if self._guard_error is not None:
            raise StartFailed.of(f"cannot guard the agent: {self._guard_error}")
        if self._ready:
            if not await self.live.probe():
                self._log.warning("the agent did not say what it can; taken to have none of it")
            if self._mcp_dir is not None:
                await self._wait_for_mcp_tools()
            return
        if self._exit is not None:
            raise StartFailed.of(
                f"the agent {self._exit.describe()} before it was ready",
                exit_code=self._exit.exit_code,
                signal=self._exit.signal,
                stderr_tail=process.stderr_tail(),
            )
        raise StartFailed.of(
            f"the agent was not ready within {settings.ready_timeout:g} s",
            stderr_tail=process.stderr_tail(),
        )

    async def _wait_for_mcp_tools(self) -> None:
        """Ask ``get_state`` until omp has tools of each MCP server, for at most
        ``mcp_start_timeout``; those still without are refused."""
        names = [server.name for server in self._settings.mcp_servers]
        timeout = self._settings.mcp_start_timeout
        found: list[str] = []
        with anyio.move_on_after(timeout):
            while True:
                try:
                    response = await self._channel.request(
                        {"type": "get_state"}, timeout=self._settings.command_timeout
                    )
                except (TimeoutError, AgentGone):
                    break
                found = loaded(names, bytes(response.data).decode("utf-8", "replace"))
                if len(found) == len(names):
                    break
                await anyio.sleep(_MCP_POLL)  # omp tells no event when a server connects
        why = f"omp loaded none of its tools within {timeout:g} s (its log says why)"
        self.mcp_refused = {name: why for name in names if name not in found}

    async def _start_guard(self, process: AgentProcess) -> None:
        try:
            await process.start_guard()
        except GuardError as exc:
            self._guard_error = exc

    def _background(self, func: Callable[[], Awaitable[object]], what: str) -> None:
        async def guarded() -> None:
            try:
                await func()
            except Exception:
                self._log.exception("process adapter task failed", task=what)

        self._ctx.start_soon(guarded, name=f"rawp process adapter: {what}")

    async def _ask_version(
        self, scope: anyio.CancelScope, env: dict[str, str], workspace: Path
    ) -> None:
        with scope:
            version = await agent_version(
                self._settings.command, env=env, cwd=workspace, log=self._log
            )
            if self.version is None:
                self.version = version

    def _mark_ready(self) -> None:
        self._ready = True
        self._ready_or_gone.set()

    async def _probe_state(self) -> None:
        try:
            await self._channel.request({"type": "get_state"}, timeout=self._settings.ready_timeout)
        except (TimeoutError, AgentGone):
            return
        self._mark_ready()

    # ------------------------------------------------------------ reading

    async def _on_messages(self, messages: list[WireMessage]) -> None:
        """The messages of one read: their payloads go out together, each batch before
        the control message or signal that follows it is acted on."""
        payloads: list[ClientPayload] = []
        feed = self._translator.feed
        update = self._translator.update
        # Exact types tested first: isinstance is slow on msgspec structs; updates are
        # most messages by far, and control messages are rare.
        for message in messages:
            if type(message) is MessageUpdate:
                payload = update(message)
                if payload is not None:
                    payloads.append(payload)
                continue
            if type(message) in _CONTROL_TYPES and isinstance(message, _CONTROL):
                if payloads:
                    await self._ctx.emit_many(payloads)
                    payloads = []
                await self._on_control(message)
                continue
            for output in feed(message):
                if isinstance(output, SIGNALS):
                    if payloads:
                        await self._ctx.emit_many(payloads)
                        payloads = []
                    self._on_signal(output)
                else:
                    payloads.append(output)
        if payloads:
            await self._ctx.emit_many(payloads)

    async def _on_control(
        self, message: Response | UiRequest | Ready | HostToolCallRequest | HostToolCancel
    ) -> None:
        if isinstance(message, Response):
            self._on_response(message)
        elif isinstance(message, UiRequest):
            await self._on_dialog_request(message)
        elif isinstance(message, HostToolCallRequest):
            self.host_tools.on_call(message)
        elif isinstance(message, HostToolCancel):
            self.host_tools.on_cancel(message)
        else:
            if message.version:
                self.version = message.version
            self._mark_ready()

    def _on_signal(self, signal: Signal) -> None:
        state = self._turn
        if isinstance(signal, RunEnded):
            if state is not None:
                state.run_ends.append(signal)
                state.wake()
            return
        if state is not None:
            state.wake()  # a retry the turn waits for has started, or the retries ended
        if isinstance(signal, RetriesEnded):
            return
        aborted = state.aborting if state is not None else self._aborted_last
        if aborted:
            # The abort reached the agent before this run began; stop the run too.
            self._background(self._send_abort, "abort a run that began late")

    def _on_response(self, response: Response) -> None:
        if self._channel.on_response(response):
            return
        if response.success:
            self._log.debug("answer to no open command", command=response.command)
        else:
            self._log.warning(
                "the agent reported a failed command",
                command=response.command,
                error=response.error,
            )

    # ------------------------------------------------------------ dialogs

    async def _on_dialog_request(self, request: UiRequest) -> None:
        if request.method == "cancel":
            target = self._dialogs.get(request.targetId or "")
            if target is not None:
                target.answered = True
                target.scope.cancel()
            return
        dialog = interpret(
            request,
            timeout_ms=self._dialog_timeout_ms,
            claim_tool=self._translator.claim_announced_tool,
        )
        if dialog is None:
            return
        if self._passes_unasked(dialog):
            await self._answer(_OpenDialog(dialog), dialog.response(_GATE_PASSED))
            return
        if len(self._dialogs) >= MAX_OPEN_DIALOGS:
            await self._refuse(dialog)
            return
        opened = _OpenDialog(dialog)
        self._dialogs[dialog.request_id] = opened
        turn_id = self._translator.turn_id
        self._background(lambda: self._run_dialog(opened, turn_id), "dialog")

    def _passes_unasked(self, dialog: Dialog) -> bool:
        """A permission the Master is not asked: a host tool's (the runtime asks under
        its own name), or one for a tool ``permission_tools`` does not name (omp's own
        approval asks about every tool of a tier, more than the list)."""
        context = dialog.context
        if dialog.interaction_type != "PERMISSION" or context is None:
            return False
        name = context.tool_name
        if name is None:
            return False
        if self._translator.host_tool_of(name, context.tool_input) is not None:
            return True
        return not self.host_tools.gated(name)

    async def _run_dialog(self, opened: _OpenDialog, turn_id: str | None) -> None:
        dialog = opened.dialog
        try:
            state = self._turn
            if state is not None and state.aborting:
                await self._answer(opened, dialog.denial())
                return
            with opened.scope:
                outcome = await self._ctx.interact(dialog.question(turn_id))
                await self._answer(opened, dialog.response(outcome))
        finally:
            self._dialogs.pop(dialog.request_id, None)

    async def _refuse(self, dialog: Dialog) -> None:
        """Refuse a dialog over :data:`MAX_OPEN_DIALOGS` (reported once per session)."""
        self._dialogs_refused += 1
        if self._dialogs_refused == 1:
            await self._ctx.emit(
                AgentError(
                    severity="warning",
                    error_code="AGENT_ERROR",
                    message=f"the agent opened more than {MAX_OPEN_DIALOGS} dialogs at once; "
                    "its further dialogs are refused without asking",
                )
            )
        try:
            self._refusals.send_nowait(dialog.denial())
        except anyio.WouldBlock:
            self._log.debug("dialog dropped unanswered", refused=self._dialogs_refused)

    async def _refuse_dialogs(self) -> None:
        async with self._to_refuse:
            async for refusal in self._to_refuse:
                try:
                    await self._channel.send(refusal)
                except AgentGone:
                    return

    async def _answer(self, opened: _OpenDialog, response: dict[str, Any]) -> None:
        if opened.answered:
            return
        opened.answered = True
        try:
            await self._channel.send(response)
        except AgentGone:
            self._log.debug("dialog answer not delivered: the agent is gone")

    async def _deny_open_dialogs(self) -> None:
        """Answer every open dialog with a denial before anything that could block the
        agent's input loop (xcsh reads nothing else while it handles ``abort``)."""
        for opened in list(self._dialogs.values()):
            await self._answer(opened, opened.dialog.denial())

    # ------------------------------------------------------------ turns

    async def prompt(self, turn: Turn) -> TurnResult:
        state = _TurnState(turn)
        self._turn = state
        self._aborted_last = False
        self._translator.begin_turn(turn.turn_id)
        command: dict[str, Any] = {"type": "prompt", "message": turn.text}
        if turn.request.images:
            command["images"] = [
                {"type": "image", "data": image.data, "mimeType": image.media_type}
                for image in turn.request.images
            ]
        command_id = self._channel.new_id()
        failure: AgentFailure | None = None
        try:
            response = await self._channel.request(
                command,
                timeout=self._settings.command_timeout,
                command_id=command_id,
                on_late=state.on_late_answer,
            )
            if not response.success:
                raise AgentFailure.of(f"the agent refused the prompt: {response.error}")
            await self._wait_until_idle(state)
        except AgentFailure as exc:
            failure = exc
        except TimeoutError:
            failure = AgentFailure.of(
                f"the agent did not take the prompt within {self._settings.command_timeout:g} s"
            )
        except AgentGone as exc:
            failure = await self._gone_failure(exc)
        finally:
            self._channel.forget(command_id)
            self._turn = None
            self._aborted_last = state.aborting
        return await self._finish(self._translator.finish_turn(), failure)

    async def _finish(self, outcome: TurnOutcome, failure: AgentFailure | None) -> TurnResult:
        usage = outcome.usage
        if usage is not None:
            await self._ctx.emit(usage)
        if failure is not None:
            raise failure
        if outcome.error is not None:
            raise AgentFailure.of(outcome.error)
        totals = None
        if usage is not None:
            totals = TokenUsage.model_validate(usage.model_dump(exclude={"turn_id"}))
        return TurnResult(stop_reason=outcome.stop_reason, usage=totals)

    async def _gone_failure(self, exc: AgentGone) -> AgentFailure:
        # The exit watcher reports the death (with its exit code); give it the chance
        # to end this turn with that error rather than a vaguer one.
        with anyio.move_on_after(_STDOUT_DRAIN + 1):
            await self._exited.wait()
        return AgentFailure.of(f"the agent went away during the turn: {exc}")

    async def _wait_until_idle(self, state: _TurnState) -> None:
        """Until a run of the agent ends and nothing follows it: ``agent_end`` with
        ``isTerminal`` where the agent says so, otherwise ``get_state`` confirms. After
        an abort that stopped the prompt before its run began (omp then says nothing),
        ``get_state`` confirms too."""
        while True:
            while not (state.run_ends or state.failure or self._aborted_between_runs(state)):
                await state.wakeup.wait()
                state.wakeup = anyio.Event()
            if state.failure is not None:
                raise AgentFailure.of(state.failure)
            if not state.run_ends:
                if await self._confirm_idle(state):
                    return
                continue
            ended = state.run_ends.popleft()
            if ended.terminal is False or state.run_ends:
                continue
            if ended.terminal is True or await self._confirm_idle(state):
                return

    def _aborted_between_runs(self, state: _TurnState) -> bool:
        return state.abort_answered and not self._translator.run_active

    async def _confirm_idle(self, state: _TurnState) -> bool:
        """Ask ``get_state`` until the agent is idle or another run ends (then False).

        An agent waiting to retry a failed model call says it is idle (pi); the turn then
        waits for the retry's run or the end of the retries instead, so that nothing the
        retry does lands after the turn's end.
        """
        delay = _IDLE_POLL_FIRST
        while not state.run_ends and state.failure is None:
            if self._retry_pending(state):
                await self._wait_for_retry(state)
                if self._translator.run_active:
                    return False  # the retry runs: its end is awaited like any run's
                continue
            try:
                response = await self._channel.request(
                    {"type": "get_state"}, timeout=self._settings.command_timeout
                )
            except TimeoutError:
                self._log.warning("get_state unanswered after agent_end; the turn ends")
                return True
            if not response.success or not decode_state(response.data).isStreaming:
                if not self._retry_pending(state):
                    return True
                continue
            with anyio.move_on_after(delay):
                await state.wakeup.wait()
            delay = min(delay * 2, _IDLE_POLL_MAX)
        return False

    def _retry_pending(self, state: _TurnState) -> bool:
        # An answered abort has cancelled whatever retry was pending.
        return self._translator.retry_pending and not state.abort_answered

    async def _wait_for_retry(self, state: _TurnState) -> None:
        """Until the pending retry starts, the retries end, or the turn fails; bounded by
        the delay the agent announced plus ``command_timeout``."""
        bound = self._translator.retry_delay + self._settings.command_timeout
        with anyio.move_on_after(bound) as waited:
            while self._retry_pending(state) and not (state.run_ends or state.failure):
                await state.wakeup.wait()
                state.wakeup = anyio.Event()
        if waited.cancelled_caught:
            self._log.warning("the agent's announced retry did not start", waited_s=bound)
            self._translator.retry_pending = False

    async def abort(self, turn: Turn) -> None:
        state = self._turn
        if state is None or state.turn.turn_id != turn.turn_id:
            return
        state.aborting = True
        self._translator.note_abort()
        await self._deny_open_dialogs()
        try:
            # The agents answer once they are idle (omp: after agent_end).
            await self._channel.request({"type": "abort"}, timeout=self._settings.command_timeout)
        except (TimeoutError, AgentGone) as exc:
            self._log.warning("abort unanswered", error=repr(exc))
            return
        state.abort_answered = True
        state.wake()

    async def _send_abort(self) -> None:
        await self._deny_open_dialogs()
        try:
            await self._channel.send({"id": self._channel.new_id(), "type": "abort"})
        except AgentGone:
            self._log.debug("abort not delivered: the agent is gone")

    async def compact(self, custom_instructions: str | None) -> None:
        command: dict[str, Any] = {"type": "compact"}
        if custom_instructions:
            command["customInstructions"] = custom_instructions
        try:
            response = await self._channel.request(command, timeout=self._settings.compact_timeout)
        except TimeoutError:
            raise AgentFailure.of(
                f"compaction did not finish within {self._settings.compact_timeout:g} s"
            ) from None
        except AgentGone as exc:
            raise AgentFailure.of(f"compaction failed: {exc}") from exc
        if nothing_to_compact(response.error):
            await self._ctx.emit(SessionCompacted(trigger="manual", compacted=False))
            return
        if not response.success:
            raise AgentFailure.of(f"the agent could not compact its context: {response.error}")
        result = decode_compaction(response.data)
        tokens = int(result.tokensBefore) if result.tokensBefore is not None else None
        await self._ctx.emit(
            SessionCompacted(trigger="manual", tokens_before=tokens, summary=result.summary)
        )

    # ------------------------------------------------------------ the end

    async def _write(self, data: bytes) -> None:
        assert self._process is not None
        try:
            await self._process.write(data)
        except AgentWriteError as exc:
            raise AgentGone(str(exc)) from exc

    async def _watch_exit(self) -> None:
        process = self._process
        assert process is not None
        status = exit_status(await process.wait())
        if not self._closing:
            # The tool processes of a dead agent are leftovers (and may hold its stdout).
            await process.kill_leftovers()
        assert self._reader is not None
        await self._reader.drained(_STDOUT_DRAIN)
        if not self._closing:
            await process.stderr_ended()  # its last words go in the error's stderr tail
        self._exit = status
        self._exited.set()
        self._ready_or_gone.set()
        if self._closing or not self._ready:
            return
        self._log.info("agent exited on its own", returncode=status.returncode)
        error: AgentError | None = status.error(stderr_tail=process.stderr_tail())
        self._ctx.agent_exited(
            AgentExit(exit_code=status.exit_code, signal=status.signal, error=error)
        )

    async def close(self) -> CloseResult:
        with anyio.CancelScope(shield=True):
            status = await self._stop()
            if self._mcp_dir is not None:
                await anyio.to_thread.run_sync(remove_config_dir, self._mcp_dir)
                self._mcp_dir = None
        if status is None:
            return CloseResult()
        return CloseResult(exit_code=status.exit_code, signal=status.signal)

    async def _stop(self) -> ExitStatus | None:
        self._closing = True
        process = self._process
        if process is None:
            return None
        with anyio.move_on_after(_DIALOG_DENY_BOUND):
            await self._deny_open_dialogs()
        self._channel.fail_all("the session is closing")
        self._refusals.close()
        status = await process.terminate(
            stdin_grace=self._settings.stdin_close_grace,
            sigterm_grace=self._settings.sigterm_grace,
        )
        if self._reader is not None:
            await self._reader.drained(_STDOUT_DRAIN)
        await process.release()
        self._log.info("agent stopped", returncode=status.returncode if status else None)
        return status
