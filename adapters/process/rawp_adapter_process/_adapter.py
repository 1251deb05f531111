"""The process adapter: xcsh-family RPC agents (xcsh, omp, pi) as child processes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Self

from rawp_adapter_process._launch import agent_name, permission_gated
from rawp_adapter_process._rpc import RpcAgent
from rawp_adapter_process._settings import ProcessSettings
from rawp_adapter_process._single_turn import SingleTurnAgent
from rawp_adapters import (
    Adapter,
    AdapterSettings,
    AgentMetadata,
    CloseResult,
    ModelState,
    SessionContext,
    Turn,
    TurnResult,
    UnsupportedOperation,
    mcp_server_refused,
)
from rawp_adapters.frames import (
    AgentInfo,
    Features,
    HostTool,
    ModelInfo,
    ModelSet,
    PlanEntry,
    PromptSteer,
)


class ProcessAdapter(Adapter[ProcessSettings]):
    """Runs an agent that speaks the xcsh RPC protocol (``adapter_type: "process"``).

    By default one long-lived ``--mode rpc`` process per session; with
    ``single_turn_process`` one one-shot ``--mode json`` process per prompt.
    """

    adapter_type: ClassVar[str] = "process"
    settings_model: ClassVar[type[AdapterSettings]] = ProcessSettings

    def __init__(self, settings: ProcessSettings, *, single_turn_process: bool = False) -> None:
        if not isinstance(settings, ProcessSettings):
            raise TypeError(f"ProcessAdapter needs ProcessSettings, not {type(settings).__name__}")
        super().__init__(settings)
        self.single_turn_process = single_turn_process
        self._agent: RpcAgent | SingleTurnAgent | None = None

    @classmethod
    def from_metadata(cls, metadata: AgentMetadata) -> Self:
        """As :meth:`Adapter.from_metadata`, honouring ``single_turn_process`` (§18)."""
        return cls(
            cls.parse_settings(metadata.settings),
            single_turn_process=metadata.single_turn_process,
        )

    @property
    def features(self) -> Features:
        rpc = not self.single_turn_process
        live = self._agent.live if isinstance(self._agent, RpcAgent) else None
        return Features(
            adapter_type=self.adapter_type,
            context_compaction=rpc,
            thinking=True,
            tool_events=True,
            permission_requests=rpc and permission_gated(self.settings),
            abort=True,
            single_turn_process=self.single_turn_process,
            images=rpc,
            process_containment=(
                self._agent.containment if isinstance(self._agent, RpcAgent) else None
            ),
            host_tools=live is not None and live.host_tools,
            steering=rpc,
            follow_up=rpc,
            model_change=live is not None and live.models,
            thinking_change=live is not None and live.models,
            model_list=live is not None and live.models,
            plans=live is not None and live.todos,
            plan_seeding=live is not None and live.todos,
            mcp_servers=self._mcp_given(),
        )

    def _mcp_given(self) -> list[str]:
        refused = self._mcp_refused()
        return [s.name for s in self.settings.mcp_servers if s.name not in refused]

    def _mcp_refused(self) -> dict[str, str]:
        """The session's MCP servers the agent did not get, and why."""
        if isinstance(self._agent, RpcAgent):
            return self._agent.mcp_refused
        names = (server.name for server in self.settings.mcp_servers)
        return dict.fromkeys(names, "a single-turn agent process takes no MCP servers")

    @property
    def notices(self) -> list[str]:
        return self.settings.env_notices()

    @property
    def agent_info(self) -> AgentInfo:
        if not isinstance(self._agent, RpcAgent):
            return AgentInfo(name=agent_name(self.settings))
        live = self._agent.live
        return AgentInfo(
            name=agent_name(self.settings),
            version=self._agent.version,
            model=live.model,
            thinking_level=live.thinking_level,
        )

    async def start(self, ctx: SessionContext) -> None:
        if self.single_turn_process:
            self._agent = SingleTurnAgent(self.settings, ctx)
        else:
            self._agent = RpcAgent(self.settings, ctx)
        await self._agent.start()
        for name, why in self._mcp_refused().items():
            await ctx.emit(mcp_server_refused(name, why))

    async def prompt(self, turn: Turn) -> TurnResult:
        assert self._agent is not None, "prompt() before start()"
        return await self._agent.prompt(turn)

    async def abort(self, turn: Turn) -> None:
        if self._agent is not None:
            await self._agent.abort(turn)

    async def compact(self, custom_instructions: str | None) -> None:
        if not isinstance(self._agent, RpcAgent):
            raise UnsupportedOperation("a single-turn agent process cannot compact its context")
        await self._agent.compact(custom_instructions)

    def _rpc(self, what: str) -> RpcAgent:
        if not isinstance(self._agent, RpcAgent):
            raise UnsupportedOperation(f"a single-turn agent process cannot {what}")
        return self._agent

    async def publish_tools(self, tools: Sequence[HostTool]) -> None:
        agent = self._rpc("call the Master's tools")
        if not agent.live.host_tools:
            raise UnsupportedOperation("this agent has no host tools (no `set_host_tools`)")
        await agent.host_tools.publish(tools)

    async def steer(self, turn: Turn, message: PromptSteer) -> None:
        del turn  # the agent takes it into whatever it runs now: the turn's run
        await self._rpc("take messages during a turn").live.steer(message)

    async def set_model(self, change: ModelSet) -> ModelState:
        return await self._rpc("change its model").live.set_model(change)

    async def list_models(self) -> list[ModelInfo]:
        return await self._rpc("list its models").live.list_models()

    async def set_plan(self, entries: Sequence[PlanEntry]) -> list[PlanEntry]:
        agent = self._rpc("seed a plan")
        if not agent.live.todos:
            raise UnsupportedOperation("this agent has no todo list (no `set_todos`)")
        return await agent.live.set_plan(entries)

    async def close(self) -> CloseResult:
        if self._agent is None:
            return CloseResult()
        return await self._agent.close()
