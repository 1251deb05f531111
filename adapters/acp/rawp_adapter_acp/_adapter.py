"""The ACP adapter: any Agent Client Protocol agent over stdio, as a ``process`` agent."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import anyio
from acp import RequestError, schema

from rawp_adapter_acp._agent import (
    AcpAgent,
    Exited,
    LineTooLong,
    Permission,
    Started,
    Update,
    UsageReport,
)
from rawp_adapter_acp._bridge import Bridge
from rawp_adapter_acp._host_mcp import HostToolServer
from rawp_adapter_acp._models import ModelControl
from rawp_adapter_acp._settings import AcpSettings
from rawp_adapter_acp._translate import SERVER_NAME, Translator, waits_for_announcement
from rawp_adapters import (
    Adapter,
    AdapterSettings,
    AgentExit,
    AgentFailure,
    CloseResult,
    InteractionOutcome,
    ModelState,
    OperationRejected,
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
    HostTool,
    Mode,
    ModelInfo,
    ModelSet,
    StopReason,
    TokenUsage,
)
from rawp_adapters.processes import (
    SESSION_ID_VAR,
    ExitStatus,
    agent_environment,
    check_workspace,
)

_STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "end_turn",
    "max_tokens": "max_tokens",
    "max_turn_requests": "max_tokens",
    "refusal": "refusal",
    "cancelled": "cancelled",
}


@dataclass
class _Barrier:
    event: anyio.Event = field(default_factory=anyio.Event)


@dataclass
class _TurnState:
    turn: Turn
    translator: Translator
    aborting: bool = False
    pending: list[Permission] = field(default_factory=list)
    unannounced: dict[str, anyio.Event] = field(default_factory=dict)
    """Permission requests waiting for the agent to announce their call, by call id."""
    cost: float | None = None


def choose_option(
    outcome: InteractionOutcome, options: list[schema.PermissionOption], *, cancelling: bool
) -> schema.RequestPermissionResponse:
    """The ACP answer: allow → an ``allow_once`` option (else ``allow_always``); deny and
    timeout → ``reject_once`` (else ``reject_always``), never an allow; ``cancelled`` only
    while the turn is being cancelled (or when the agent offers no reject option)."""
    if not cancelling:
        kinds = (
            ("allow_once", "allow_always") if outcome.allowed else ("reject_once", "reject_always")
        )
        for kind in kinds:
            for option in options:
                if option.kind == kind:
                    return schema.RequestPermissionResponse(
                        outcome=schema.AllowedOutcome(
                            outcome="selected", option_id=option.option_id
                        )
                    )
    return schema.RequestPermissionResponse(outcome=schema.DeniedOutcome(outcome="cancelled"))


def _turn_usage(response: schema.PromptResponse, cost: float | None) -> TokenUsage | None:
    fields: dict[str, Any] = {}
    if response.usage is not None:
        usage = response.usage
        fields = {
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cache_read_tokens": usage.cached_read_tokens,
            "cache_write_tokens": usage.cached_write_tokens,
        }
    else:  # gemini: only PromptResponse._meta.quota.token_count
        quota = (response.field_meta or {}).get("quota")
        counts = quota.get("token_count") if isinstance(quota, dict) else None
        if isinstance(counts, dict):
            fields = {
                "input_tokens": counts.get("input_tokens"),
                "output_tokens": counts.get("output_tokens"),
            }
    if cost is not None:
        fields["cost_usd"] = cost
    fields = {k: v for k, v in fields.items() if v is not None}
    return TokenUsage(**fields) if fields else None


def _empty(usage: schema.Usage | None) -> bool:
    return usage is None or not (usage.input_tokens or usage.output_tokens or usage.total_tokens)


class AcpAdapter(Adapter[AcpSettings]):
    """Runs an ACP agent (``adapter_type: "process"``, ``settings.protocol: "acp"``)."""

    adapter_type: ClassVar[str] = "process"
    settings_model: ClassVar[type[AdapterSettings]] = AcpSettings

    def __init__(self, settings: AcpSettings) -> None:
        if not isinstance(settings, AcpSettings):
            raise TypeError(f"AcpAdapter needs AcpSettings, not {type(settings).__name__}")
        super().__init__(settings)
        self._ctx: SessionContext | None = None
        self._bridge: Bridge | None = None
        self._agent: AcpAgent | None = None
        self._started: Started | None = None
        self._turn: _TurnState | None = None
        self._last_cancelled = False
        self._closing = False
        self._closed: CloseResult | None = None
        self._exit: ExitStatus | None = None
        self._session_cost: float | None = None
        self._models = ModelControl()
        self._host: HostToolServer | None = None

    # ------------------------------------------------------------ what it is

    @property
    def acp_session_id(self) -> str | None:
        """The agent's session id (give it as ``resume_session_id`` to resume)."""
        return self._started.session_id if self._started is not None else None

    def _mode_ids(self) -> set[str]:
        modes = self._started.modes if self._started is not None else None
        return {m.id for m in modes.available_modes} if modes is not None else set()

    @property
    def features(self) -> Features:
        process = self._agent.process if self._agent is not None else None
        return Features(
            adapter_type=self.adapter_type,
            plan_mode=self.settings.modes.get("plan") in self._mode_ids(),
            thinking=True,
            tool_events=True,
            permission_requests=True,
            abort=True,
            images=False,
            model_change=self._models.can_change_model,
            model_list=self._models.can_change_model,
            thinking_change=self._models.thinking_option is not None,
            plans=True,
            host_tools=self._host is not None and SERVER_NAME not in self._refused(),
            process_containment=process.containment if process is not None else None,
            mcp_servers=self._mcp_given(),
        )

    def _refused(self) -> dict[str, str]:
        return self._started.mcp_refused if self._started is not None else {}

    def _mcp_given(self) -> list[str]:
        if self._started is None:
            return []
        return [s.name for s in self.settings.mcp_servers if s.name not in self._refused()]

    @property
    def agent_info(self) -> AgentInfo:
        info = self._started.init.agent_info if self._started is not None else None
        name = self.settings.agent_name or (info.name if info is not None else None)
        return AgentInfo(
            name=name or Path(self.settings.command[0]).name,
            version=info.version if info is not None else None,
            model=self._models.current_model,
            thinking_level=self._models.thinking_level,
        )

    @property
    def notices(self) -> list[str]:
        return self.settings.env_notices()

    # ------------------------------------------------------------ start

    async def start(self, ctx: SessionContext) -> None:
        self._ctx = ctx
        log = ctx.log.bind(adapter="acp")
        workspace = check_workspace(ctx.workspace)
        bridge = Bridge.for_current_loop(ctx.start_soon)
        await bridge.open()
        self._bridge = bridge
        ctx.start_soon(lambda: self._pump(ctx, bridge), name="acp pump")
        agent = AcpAgent(bridge, log)
        self._agent = agent
        settings = self.settings
        env = agent_environment(settings, session_id=ctx.session_id, workspace=workspace)
        mcp_servers = list(settings.mcp_servers)
        if settings.host_tools:
            self._host = HostToolServer(ctx, self._turn_id, settings.host_tools_relist_wait)
            mcp_servers.append(await self._host.start(settings.host_tools_transport))
        try:
            self._started = await bridge.call(
                lambda: agent.start(
                    list(settings.command),
                    cwd=workspace,
                    env=env,
                    marker=(SESSION_ID_VAR, ctx.session_id),
                    stderr_tail_bytes=settings.stderr_tail_bytes,
                    max_line_bytes=settings.max_line_bytes,
                    timeout=settings.start_timeout,
                    resume=settings.resume_session_id,
                    mcp_servers=mcp_servers,
                )
            )
        except Exception as exc:
            ended = None
            if agent.process is not None and not isinstance(exc, TimeoutError):
                # Most failures here are the agent dying: say how it ended, as it ended.
                ended = await bridge.call(agent.ended, _EXIT_WAIT)
            tail = agent.process.stderr_tail() if agent.process is not None else None
            self._closed = await self._shutdown()
            what = "resume the session" if settings.resume_session_id else "start the agent"
            if ended is not None:
                raise StartFailed.of(
                    f"cannot {what} {settings.command[0]!r}: it {ended.describe()} "
                    "before it was ready",
                    exit_code=ended.exit_code,
                    signal=ended.signal,
                    stderr_tail=tail,
                ) from exc
            raise StartFailed.of(
                f"cannot {what} {settings.command[0]!r}: {_describe(exc)}", stderr_tail=tail
            ) from exc
        self._models = ModelControl(self._started.config_options, self._started.models)
        for name, why in self._started.mcp_refused.items():
            await ctx.emit(mcp_server_refused(name, why))
        log.info("acp session ready", acp_session_id=self._started.session_id)

    def _turn_id(self) -> str | None:
        return self._turn.turn.turn_id if self._turn is not None else None

    async def publish_tools(self, tools: Sequence[HostTool]) -> None:
        if not self.features.host_tools:
            await super().publish_tools(tools)  # raises UnsupportedOperation
        assert self._host is not None
        await self._host.publish(tools)

    # ------------------------------------------------------------ the agent's messages

    async def _pump(self, ctx: SessionContext, bridge: Bridge) -> None:
        # Its own bridge, not self._bridge: a start that fails before the pump first
        # runs has already let go of that one.
        async for item in bridge.items:
            try:
                await self._handle(ctx, item)
            except Exception:  # never lose the pump over one message
                ctx.log.exception("cannot translate an ACP message", item=repr(item)[:300])

    async def _handle(self, ctx: SessionContext, item: object) -> None:
        turn = self._turn
        if isinstance(item, _Barrier):
            item.event.set()
        elif isinstance(item, Update):
            update = item.update
            if isinstance(update, schema.CurrentModeUpdate) and self._started is not None:
                modes = self._started.modes
                if modes is not None:
                    modes.current_mode_id = update.current_mode_id
            elif isinstance(update, schema.ConfigOptionUpdate):
                self._models.options = list(update.config_options)
            if turn is None:
                ctx.log.debug("ACP update outside a turn", kind=type(update).__name__)
                return
            for payload in turn.translator.update(update):
                await ctx.emit(payload)
            if turn.unannounced and isinstance(
                update, schema.ToolCallStart | schema.ToolCallProgress
            ):
                announced = turn.unannounced.pop(update.tool_call_id, None)
                if announced is not None:
                    announced.set()
        elif isinstance(item, Permission):
            if turn is None:
                self._answer(item, choose_option(_DENY, item.options, cancelling=False))
                return
            turn.pending.append(item)
            frames = turn.translator.permission(item.tool_call)
            if frames is None:
                turn.unannounced[item.tool_call.tool_call_id] = anyio.Event()
            else:
                for payload in frames:
                    await ctx.emit(payload)
            ctx.start_soon(lambda: self._ask(ctx, turn, item), name="acp permission")
        elif isinstance(item, UsageReport):
            if item.cost is not None:
                before = self._session_cost
                self._session_cost = item.cost
                if turn is not None:
                    spent = item.cost - (before or 0.0)
                    turn.cost = (turn.cost or 0.0) + max(spent, 0.0)
        elif isinstance(item, LineTooLong):
            await ctx.emit(
                AgentError(
                    severity="warning",
                    error_code="FRAME_TOO_LARGE",
                    message=f"the agent wrote a {item.size}-byte line; it was skipped",
                )
            )
        elif isinstance(item, Exited):
            self._exit = item.status
            if not self._closing:
                tail = (
                    self._agent.process.stderr_tail()
                    if self._agent and self._agent.process
                    else None
                )
                ctx.agent_exited(
                    AgentExit(
                        exit_code=item.status.exit_code,
                        signal=item.status.signal,
                        error=item.status.error(stderr_tail=tail),
                    )
                )

    def _answer(self, item: Permission, response: schema.RequestPermissionResponse) -> None:
        assert self._bridge is not None
        self._bridge.resolve(item.future, response)

    async def _ask(self, ctx: SessionContext, turn: _TurnState, item: Permission) -> None:
        call = item.tool_call
        try:
            announced = turn.unannounced.get(call.tool_call_id)
            if announced is not None:
                with anyio.move_on_after(self.settings.announcement_wait):
                    await announced.wait()
                if turn.aborting:  # answered by the abort
                    return
                if turn.unannounced.pop(call.tool_call_id, None) is not None:
                    ctx.log.warning(
                        "the agent asks about a call it has not announced; asking under "
                        "the name its request gives",
                        tool_call_id=call.tool_call_id,
                    )
                    for payload in turn.translator.announce(call):
                        await ctx.emit(payload)
            if turn.translator.relayed(call):
                self._answer(item, choose_option(_RELAYED, item.options, cancelling=False))
                return
            question = turn.translator.question(
                call, timeout_ms=self.settings.interaction_timeout_ms
            )
            outcome = await ctx.interact(question)
        finally:
            if item in turn.pending:
                turn.pending.remove(item)
        cancelling = turn.aborting or outcome.reason in ("aborted", "closed")
        self._answer(item, choose_option(outcome, item.options, cancelling=cancelling))

    # ------------------------------------------------------------ turns

    async def _send(self, turn: _TurnState, text: str | None = None) -> schema.PromptResponse:
        assert self._bridge is not None
        assert self._agent is not None
        agent = self._agent
        try:
            response = await self._bridge.call(
                agent.prompt, turn.turn.text if text is None else text
            )
        except RequestError as exc:
            raise AgentFailure.of(f"the agent could not run the prompt: {_describe(exc)}") from exc
        except ConnectionError as exc:
            raise AgentFailure.of(f"the agent went away: {exc}") from exc
        finally:
            await self._drain()
        return response

    async def _drain(self) -> None:
        """Wait until every message the agent sent before now has been handled."""
        assert self._bridge is not None
        barrier = _Barrier()
        self._bridge.post_here(barrier)
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            await barrier.event.wait()

    async def prompt(self, turn: Turn) -> TurnResult:
        waits = self._started is not None and waits_for_announcement(self._started.init)
        state = _TurnState(turn, Translator(turn.turn_id, waits_for_announcement=waits))
        self._turn = state
        try:
            if self._host is not None:
                await self._host.before_prompt()
            response = await self._send(state)
            if (
                self._last_cancelled
                and self.settings.resend_stale_prompt
                and not state.aborting
                and response.stop_reason == "end_turn"
                and state.translator.updates == 0
                and _empty(response.usage)
            ):
                # claude-agent-acp answered the cancelled turn's leftover result: this
                # prompt's reply only comes with the next prompt. Ask again, once.
                assert self._ctx is not None
                self._ctx.log.info("stale answer after a cancelled turn; sending the prompt again")
                response = await self._send(state, self.settings.stale_prompt_text)
        finally:
            self._turn = None
        stop: StopReason = (
            "cancelled"
            if state.aborting
            else _STOP_REASONS.get(str(response.stop_reason), "end_turn")
        )
        self._last_cancelled = stop == "cancelled"
        return TurnResult(stop_reason=stop, usage=_turn_usage(response, state.cost))

    async def abort(self, turn: Turn) -> None:
        state = self._turn
        if state is None or state.turn.turn_id != turn.turn_id or self._bridge is None:
            return
        state.aborting = True
        cancelled = schema.RequestPermissionResponse(
            outcome=schema.DeniedOutcome(outcome="cancelled")
        )
        for item in list(state.pending):
            self._answer(item, cancelled)
        for announced in state.unannounced.values():
            announced.set()
        if self._agent is not None:
            try:
                await self._bridge.call(self._agent.cancel)
            except (ConnectionError, RequestError) as exc:
                if self._ctx is not None:
                    self._ctx.log.info("cannot send session/cancel", error=str(exc))

    async def switch_mode(self, mode: Mode) -> None:
        target = self.settings.modes.get(mode)
        if target is None or target not in self._mode_ids():
            raise UnsupportedOperation(f"this agent offers no {mode!r} mode")
        assert self._bridge is not None
        assert self._agent is not None
        try:
            await self._bridge.call(self._agent.set_mode, target, self.settings.request_timeout)
        except (RequestError, ConnectionError, TimeoutError) as exc:
            raise UnsupportedOperation(
                f"the agent refused mode {target!r}: {_describe(exc)}"
            ) from exc

    # ------------------------------------------------------------ model and thinking

    async def list_models(self) -> list[ModelInfo]:
        return self._models.models()

    async def set_model(self, change: ModelSet) -> ModelState:
        models = self._models
        if change.model is not None and change.model not in {m.id for m in models.models()}:
            known = ", ".join(m.id for m in models.models())
            raise OperationRejected(f"this agent has no model {change.model!r} (it has {known})")
        levels = models.thinking_levels()
        if change.thinking_level is not None and change.thinking_level not in levels:
            raise OperationRejected(
                f"this agent has no thinking level {change.thinking_level!r} "
                f"(it has {', '.join(levels)})"
            )
        assert self._bridge is not None
        assert self._agent is not None
        agent, timeout = self._agent, self.settings.request_timeout
        try:
            if change.model is not None:
                option = models.model_option
                if option is not None:
                    models.options = await self._bridge.call(
                        agent.set_config_option, option.id, change.model, timeout
                    )
                else:
                    await self._bridge.call(agent.set_model, change.model, timeout)
                    models.model_set(change.model)
            thinking = models.thinking_option
            if change.thinking_level is not None and thinking is not None:
                models.options = await self._bridge.call(
                    agent.set_config_option, thinking.id, change.thinking_level, timeout
                )
        except RequestError as exc:
            raise OperationRejected(f"the agent refused: {_describe(exc)}") from exc
        now = ModelState(model=models.current_model, thinking_level=models.thinking_level)
        if (change.model or now.model) != now.model or (
            change.thinking_level or now.thinking_level
        ) != now.thinking_level:
            # omp clamps a thinking level to what the model supports ("off" without reasoning)
            raise OperationRejected(
                f"the agent kept model {now.model!r}, thinking level {now.thinking_level!r}"
            )
        return now

    # ------------------------------------------------------------ the end

    async def _shutdown(self) -> CloseResult:
        self._closing = True
        status: ExitStatus | None = None
        with anyio.CancelScope(shield=True):
            bridge, agent = self._bridge, self._agent
            self._bridge = None
            if bridge is not None and agent is not None:
                try:
                    status = await bridge.call(
                        agent.stop, self.settings.stdin_close_grace, self.settings.sigterm_grace
                    )
                finally:
                    await bridge.aclose()
        status = status or self._exit
        if status is None:
            return CloseResult()
        return CloseResult(exit_code=status.exit_code, signal=status.signal)

    async def close(self) -> CloseResult:
        if self._closed is None:
            self._closed = await self._shutdown()
        return self._closed


_DENY = InteractionOutcome(decision="deny", reason="closed")
_RELAYED = InteractionOutcome(decision="allow", reason="answered")
"""The agent's side of a host call: the runtime asks under the host tool's own gate."""
_EXIT_WAIT = 2.0
"""Seconds a start failure waits for the agent's own exit, to report it."""


def _describe(exc: BaseException) -> str:
    if isinstance(exc, RequestError):
        data = exc.data
        details = data.get("details") if isinstance(data, dict) else data
        return f"{exc} ({details})" if details else str(exc)
    return str(exc) or type(exc).__name__
