"""The process adapter: xcsh-family RPC agents (xcsh, omp, pi) as child processes."""

from __future__ import annotations

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
    SessionContext,
    Turn,
    TurnResult,
    UnsupportedOperation,
)
from rawp_adapters.frames import AgentInfo, Features


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
        )

    @property
    def notices(self) -> list[str]:
        return self.settings.env_notices()

    @property
    def agent_info(self) -> AgentInfo:
        version = self._agent.version if isinstance(self._agent, RpcAgent) else None
        return AgentInfo(name=agent_name(self.settings), version=version)

    async def start(self, ctx: SessionContext) -> None:
        if self.single_turn_process:
            self._agent = SingleTurnAgent(self.settings, ctx)
        else:
            self._agent = RpcAgent(self.settings, ctx)
        await self._agent.start()

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

    async def close(self) -> CloseResult:
        if self._agent is None:
            return CloseResult()
        return await self._agent.close()
