"""``single_turn_process`` (§18): one agent process per prompt.

Each prompt runs the agent's one-shot JSON mode (``xcsh --mode json <prompt>``), which
prints the same events as RPC mode and exits. Exit 0 ends the turn and the session
goes on; the next prompt resumes the agent's session (``--session <id>`` from the
first line, ``{"type": "session", "id": …}``). A non-zero exit ends that turn with an
error (severity ``error``: the session itself is still usable). There is no stdin
channel, so there are no dialogs, no permission requests and no manual compaction.
"""

from __future__ import annotations

from functools import partial

import anyio

from rawp_adapter_process._launch import agent_env, check_executable, single_turn_argv
from rawp_adapter_process._reader import MessageReader
from rawp_adapter_process._settings import ProcessSettings
from rawp_adapter_process._translate import SIGNALS, Translator
from rawp_adapter_process._wire import SessionHeader, WireMessage
from rawp_adapters import AgentFailure, CloseResult, SessionContext, Turn, TurnResult
from rawp_adapters.frames import ClientPayload, TokenUsage
from rawp_adapters.processes import (
    SESSION_ID_VAR,
    AgentProcess,
    GuardError,
    check_workspace,
    exit_status,
)

_STDOUT_DRAIN = 2.0
"""Seconds without a new line after which the rest of stdout is given up once the agent
has exited."""


class SingleTurnAgent:
    def __init__(self, settings: ProcessSettings, ctx: SessionContext) -> None:
        self._settings = settings
        self._ctx = ctx
        self._log = ctx.log.bind(adapter="process", mode="single_turn")
        self._translator = Translator()
        self._agent_session: str | None = None
        self._process: AgentProcess | None = None
        self._aborted = False

    async def start(self) -> None:
        workspace = check_workspace(self._ctx.workspace)
        env = agent_env(self._settings, session_id=self._ctx.session_id, workspace=workspace)
        check_executable(self._settings.single_turn.command[0], env)

    async def prompt(self, turn: Turn) -> TurnResult:
        ctx, settings = self._ctx, self._settings
        argv = single_turn_argv(settings, prompt=turn.text, resume=self._agent_session)
        env = agent_env(settings, session_id=ctx.session_id, workspace=ctx.workspace)
        self._translator.begin_turn(turn.turn_id)
        self._aborted = False
        try:
            process = await AgentProcess.spawn(
                argv,
                cwd=ctx.workspace,
                env=env,
                marker=(SESSION_ID_VAR, ctx.session_id),
                stderr_tail_bytes=settings.stderr_tail_bytes,
                log=self._log,
            )
        except OSError as exc:
            self._translator.finish_turn()
            raise AgentFailure.of(
                f"cannot start the agent {argv[0]!r}: {exc}", code="SPAWN_FAILED"
            ) from exc
        self._process = process
        try:
            await process.start_guard()
            returncode = await self._run(process)
        except GuardError as exc:
            self._translator.finish_turn()
            raise AgentFailure.of(f"cannot guard the agent: {exc}", code="SPAWN_FAILED") from exc
        finally:
            self._process = None
            with anyio.CancelScope(shield=True):
                await process.terminate(stdin_grace=0, sigterm_grace=settings.sigterm_grace)
                await process.release()
        outcome = self._translator.finish_turn()
        if outcome.usage is not None:
            await ctx.emit(outcome.usage)
        status = exit_status(returncode)
        if not status.clean and not self._aborted:
            error = status.error(severity="error", stderr_tail=process.stderr_tail())
            assert error is not None
            raise AgentFailure(error)
        if outcome.error is not None:
            raise AgentFailure.of(outcome.error)
        totals = None
        if outcome.usage is not None:
            totals = TokenUsage.model_validate(outcome.usage.model_dump(exclude={"turn_id"}))
        return TurnResult(stop_reason=outcome.stop_reason, usage=totals)

    async def _run(self, process: AgentProcess) -> int:
        await process.close_stdin()
        reader = MessageReader(
            process.stdout,
            max_line_bytes=self._settings.max_line_bytes,
            on_messages=self._on_messages,
            on_error=self._ctx.emit,
            log=self._log,
        )
        async with anyio.create_task_group() as tg:
            tg.start_soon(reader.run)
            tg.start_soon(process.drain_stderr)
            tg.start_soon(
                partial(process.watch_tree, self._settings.descendant_poll_interval, _always)
            )
            returncode = await process.wait()
            # The turn is over: tool processes that outlived the agent go (they may also
            # hold its stdout open); what the agent wrote is still in the pipe.
            await process.kill_leftovers()
            await reader.drained(_STDOUT_DRAIN)
            await process.stderr_ended()  # its last words go in the error's stderr tail
            tg.cancel_scope.cancel()
        return returncode

    async def _on_messages(self, messages: list[WireMessage]) -> None:
        payloads: list[ClientPayload] = []
        for message in messages:
            if isinstance(message, SessionHeader):
                if message.id:
                    self._agent_session = message.id
                continue
            payloads += [
                out for out in self._translator.feed(message) if not isinstance(out, SIGNALS)
            ]
        await self._ctx.emit_many(payloads)

    async def abort(self, turn: Turn) -> None:
        process = self._process
        if process is None or self._translator.turn_id != turn.turn_id:
            return
        self._aborted = True
        self._translator.note_abort()
        # SIGTERM; should the agent ignore it, the session ends the turn after its abort
        # grace and the cleanup in prompt() escalates to SIGKILL.
        process.interrupt()

    async def close(self) -> CloseResult:
        process = self._process
        if process is not None:
            with anyio.CancelScope(shield=True):
                await process.terminate(stdin_grace=0, sigterm_grace=self._settings.sigterm_grace)
        return CloseResult()


def _always() -> bool:
    """A single-turn agent is busy for as long as it runs."""
    return True
