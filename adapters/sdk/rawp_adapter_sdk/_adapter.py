"""The SDK adapter: runs an agent core inside the client's process.

The session runtime around it keeps ``seq``, the turn pairing, PROMPT_IN_PROGRESS,
the interaction broker and capabilities; this adapter only starts the core, feeds
each prompt to it, turns its events into payloads and bridges its permission
callback.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Sequence
from typing import Any, ClassVar, Self

import anyio
from pydantic import Field

from rawp_adapter_sdk._bridge import PermissionBridge
from rawp_adapter_sdk._core import (
    AgentCore,
    CompactingCore,
    CoreEnvironment,
    CoreError,
    HostToolCore,
    McpCore,
    ModelCore,
    ModeSwitchingCore,
    SteeringCore,
    create_core,
    require_installed_core,
)
from rawp_adapter_sdk._translate import TurnTranslator
from rawp_adapter_sdk.events import CoreEvent
from rawp_adapters import (
    Adapter,
    AdapterSettings,
    AgentExit,
    AgentFailure,
    AgentMetadata,
    CloseResult,
    HostToolCall,
    HostToolOutcome,
    McpServers,
    ModelState,
    Progress,
    SessionContext,
    StartFailed,
    Turn,
    TurnResult,
    UnsupportedOperation,
    mcp_server_refused,
)
from rawp_adapters.frames import (
    AgentInfo,
    Features,
    HostTool,
    Mode,
    ModelInfo,
    ModelSet,
    PromptSteer,
    SessionCompacted,
)

DEFAULT_CORE = "demo"


class SdkSettings(AdapterSettings):
    """``AgentMetadata.settings`` of the ``sdk`` adapter."""

    core: str = Field(
        default=DEFAULT_CORE,
        description="The agent core: a name in the `rawp_adapters.sdk_cores` entry-point "
        "group (`demo`, `claude`, …) or an import path `package.module:Factory` (refused "
        "when the host sets `AgentMetadata.allow_import_paths` False, as the CLI does "
        "without `--allow-import-path`).",
    )
    core_options: dict[str, Any] = Field(
        default_factory=dict, description="Keyword arguments for the core's factory."
    )
    permission_timeout_ms: int | None = Field(
        default=None,
        ge=1,
        description="How long a permission request waits for the Master before it is denied; "
        "None: the session's interaction deadline (`SessionOptions.interaction_timeout_ms`).",
    )
    mcp_servers: McpServers = []


class SdkAdapter(Adapter[SdkSettings]):
    """Runs an :class:`~rawp_adapter_sdk.AgentCore` in-process (``adapter_type: "sdk"``).

    Built from settings (``SdkAdapter.from_settings({"core": "claude", ...})``) or
    around a core instance (``SdkAdapter.for_core(core)``).
    """

    adapter_type: ClassVar[str] = "sdk"
    settings_model: ClassVar[type[AdapterSettings]] = SdkSettings

    def __init__(
        self,
        settings: SdkSettings,
        *,
        core: AgentCore | None = None,
    ) -> None:
        if not isinstance(settings, SdkSettings):
            raise TypeError(f"SdkAdapter needs SdkSettings, not {type(settings).__name__}")
        super().__init__(settings)
        self.core = core if core is not None else create_core(settings.core, settings.core_options)
        self._ctx: SessionContext | None = None
        self._turn_id: str | None = None
        self._mcp_refused: dict[str, str] = {}

    @classmethod
    def from_metadata(cls, metadata: AgentMetadata) -> Self:
        """As :meth:`Adapter.from_metadata`; without ``allow_import_paths`` the core must
        be an installed one (checked before anything is imported)."""
        core = metadata.settings.get("core", DEFAULT_CORE)
        if not metadata.allow_import_paths and isinstance(core, str):
            require_installed_core(core)
        return super().from_metadata(metadata)

    @classmethod
    def for_core(cls, core: AgentCore, *, permission_timeout_ms: int | None = None) -> SdkAdapter:
        return cls(SdkSettings(permission_timeout_ms=permission_timeout_ms), core=core)

    @property
    def features(self) -> Features:
        core = self.core.features
        steers = isinstance(self.core, SteeringCore)
        models = isinstance(self.core, ModelCore)
        return Features(
            adapter_type=self.adapter_type,
            context_compaction=isinstance(self.core, CompactingCore),
            plan_mode=isinstance(self.core, ModeSwitchingCore),
            thinking=core.thinking,
            tool_events=core.tool_events,
            permission_requests=core.permission_requests,
            abort=core.abort,
            host_tools=core.host_tools and isinstance(self.core, HostToolCore),
            steering=core.steering and steers,
            follow_up=core.follow_up and steers,
            model_change=core.model_change and models,
            thinking_change=core.thinking_change and models,
            model_list=core.model_list and models,
            plans=core.plans,
            mcp_servers=[
                s.name for s in self.settings.mcp_servers if s.name not in self._mcp_refused
            ],
        )

    @property
    def agent_info(self) -> AgentInfo:
        state = self.core.model_state if isinstance(self.core, ModelCore) else ModelState()
        return AgentInfo(
            name=self.core.name,
            version=self.core.version,
            model=state.model,
            thinking_level=state.thinking_level,
        )

    async def start(self, ctx: SessionContext) -> None:
        self._ctx = ctx
        env = CoreEnvironment(
            workspace=ctx.workspace,
            session_id=ctx.session_id,
            log=ctx.log.bind(core=self.core.name),
            call_host_tool=self._call_host_tool,
            mcp_servers=tuple(self.settings.mcp_servers),
        )
        try:
            await self.core.start(env)
        except CoreError as exc:
            raise StartFailed.of(exc.message) from exc
        if isinstance(self.core, McpCore):
            self._mcp_refused = dict(self.core.mcp_refused)
        else:
            why = f"the {self.core.name} core takes no MCP servers"
            self._mcp_refused = {s.name: why for s in self.settings.mcp_servers}
        for name, why in self._mcp_refused.items():
            await ctx.emit(mcp_server_refused(name, why))

    async def prompt(self, turn: Turn) -> TurnResult:
        ctx = self._ctx
        assert ctx is not None, "prompt() before start()"
        translator = TurnTranslator(turn.turn_id)
        timeout_ms = self.settings.permission_timeout_ms
        bridge = PermissionBridge(
            ctx,
            turn_id=turn.turn_id,
            timeout_ms=ctx.interaction_timeout_ms if timeout_ms is None else timeout_ms,
        )
        self._turn_id = turn.turn_id
        try:
            await _stream(self.core.run(turn.text, bridge), translator, ctx)
        except CoreError as exc:
            raise self._failure(exc) from exc
        finally:
            self._turn_id = None
        # After an abort the session runtime reports an ``end_turn`` as ``cancelled``.
        return TurnResult(stop_reason=translator.stop_reason)

    async def abort(self, turn: Turn) -> None:
        await self.core.cancel()

    async def compact(self, custom_instructions: str | None) -> None:
        core, ctx = self.core, self._ctx
        if not isinstance(core, CompactingCore):
            await super().compact(custom_instructions)  # raises UnsupportedOperation
            return
        assert ctx is not None, "compact() before start()"
        try:
            done = await core.compact(custom_instructions or None)
        except CoreError as exc:
            raise self._failure(exc) from exc
        await ctx.emit(
            SessionCompacted(
                trigger="manual",
                tokens_before=done.tokens_before,
                summary=done.summary,
                compacted=done.compacted,
            )
        )

    async def switch_mode(self, mode: Mode) -> None:
        core = self.core
        if not isinstance(core, ModeSwitchingCore):
            await super().switch_mode(mode)  # raises UnsupportedOperation
            return
        try:
            await core.switch_mode(mode)
        except CoreError as exc:
            raise self._failure(exc) from exc

    async def publish_tools(self, tools: Sequence[HostTool]) -> None:
        core = self.core
        if not (self.features.host_tools and isinstance(core, HostToolCore)):
            await super().publish_tools(tools)  # raises UnsupportedOperation
            return
        try:
            await core.publish_tools(tools)
        except CoreError as exc:
            raise self._failure(exc) from exc

    async def steer(self, turn: Turn, message: PromptSteer) -> None:
        core = self.core
        if not isinstance(core, SteeringCore):
            await super().steer(turn, message)  # raises UnsupportedOperation
            return
        if message.images:
            raise UnsupportedOperation("this agent core takes no images in a running turn")
        try:
            await core.steer(message.text, message.delivery)
        except CoreError as exc:
            raise self._failure(exc) from exc

    async def set_model(self, change: ModelSet) -> ModelState:
        core = self.core
        if not isinstance(core, ModelCore):
            return await super().set_model(change)  # raises UnsupportedOperation
        try:
            return await core.set_model(change.model, change.thinking_level)
        except CoreError as exc:
            raise self._failure(exc) from exc

    async def list_models(self) -> list[ModelInfo]:
        core = self.core
        if not (self.features.model_list and isinstance(core, ModelCore)):
            return await super().list_models()  # raises UnsupportedOperation
        try:
            return await core.list_models()
        except CoreError as exc:
            raise self._failure(exc) from exc

    async def _call_host_tool(
        self, call: HostToolCall, on_progress: Progress | None
    ) -> HostToolOutcome:
        assert self._ctx is not None, "a host tool called before start()"
        call = dataclasses.replace(call, turn_id=call.turn_id or self._turn_id)
        return await self._ctx.call_host_tool(call, on_progress)

    async def close(self) -> CloseResult:
        await self.core.close()
        return CloseResult()

    def _failure(self, exc: CoreError) -> AgentFailure:
        """The failure to raise for ``exc``; a fatal one also ends the session (after the
        running turn, if any, has ended)."""
        if exc.fatal:
            assert self._ctx is not None
            self._ctx.agent_exited(AgentExit())
        severity = "fatal" if exc.fatal else "error"
        return AgentFailure.of(exc.message, code=exc.code, severity=severity)


ITERATOR_CLOSE_TIMEOUT_S = 5.0


async def _stream(
    events: AsyncIterator[CoreEvent], translator: TurnTranslator, ctx: SessionContext
) -> None:
    emit = ctx.emit
    try:
        async for event in events:
            payload = translator.translate(event)
            if payload is not None:
                await emit(payload)
    finally:
        # Let a core's generator run its cleanup, even when the turn was cancelled.
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            with anyio.move_on_after(ITERATOR_CLOSE_TIMEOUT_S, shield=True):
                await aclose()
