"""The OpenAI Agents SDK core (``openai-agents``).

An ``Agent`` with the Master's settings (instructions, model, tools) runs each prompt
streamed (``Runner.run_streamed``) through ``OpenAIChatCompletionsModel`` on an
``AsyncOpenAI`` client (``base_url`` for any OpenAI-compatible server). The SDK runs
only on asyncio, so it runs on an asyncio island (``rawp_adapter_sdk.islands``): the
session's loop on asyncio, a loop in a thread of its own on trio; its events are
translated there and handed over without blocking.

A tool that needs approval pauses the run with interruptions: each is one PERMISSION
question (asked together, answered in any order); allow → ``state.approve`` (the SDK
takes no edited input there: the core's own tool runs with the Master's edited input
instead of the model's), anything else → ``state.reject`` with the reason the model is
told, and the run resumes from its state. A deny that stops the turn (abort, close)
ends it cancelled instead. ``cancel`` is the SDK's own ``cancel()``. Tracing is off
unless ``tracing=True``. The SDK is imported only when the core starts.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import version as installed_version
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from rawp_adapter_sdk import (
    Allow,
    CoreEnvironment,
    CoreError,
    CoreFeatures,
    Deny,
    PermissionCallback,
    PermissionDecision,
    PermissionRequest,
)
from rawp_adapter_sdk.events import PARTS, CoreEvent, Stopped, ToolFinished
from rawp_adapter_sdk.islands import AsyncioIsland, Emit, Finished

from rawp_adapters import HostToolCall, HostToolOutcome, ModelState, OperationRejected
from rawp_adapters.frames import AgentErrorCode, HostTool, ModelInfo
from rawp_core_openai_agents._stream import TurnTranslator, field_of, parse_arguments

if TYPE_CHECKING:
    from agents import Agent, FunctionTool, RunConfig, RunResultStreaming, RunState
    from agents.items import ToolApprovalItem
    from agents.mcp import MCPServerManager
    from openai import AsyncOpenAI

SDK = "openai-agents"
INSTALL_HINT = (
    "the openai-agents core needs openai-agents==0.24.0: pip install rawp-core-openai-agents"
)
DEFAULT_MODEL = "gpt-4.1"
DEFAULT_TOOLS = ("read_file", "write_file")


@dataclass(frozen=True, slots=True)
class _End:
    """How one streamed run of the SDK ended."""

    result: RunResultStreaming | None = None
    state: RunState[Any] | None = None
    """The run's state when it paused with interruptions, taken on the island as it
    ended (before the questions are asked, not after the answers)."""
    error: Exception | None = None


class OpenAIAgentsCore:
    """Options (all optional): ``model``, ``models`` (more ids ``set_model`` takes),
    ``base_url`` and ``api_key`` of the OpenAI-compatible API (``OPENAI_API_KEY`` by
    default), ``instructions``, ``tools`` (of ``read_file``, ``write_file``),
    ``gate_all_tools`` (every tool needs approval, not only ``write_file``),
    ``max_turns``, ``max_retries`` (of the HTTP client), ``tracing`` (export traces)."""

    def __init__(
        self,
        *,
        model: str = DEFAULT_MODEL,
        models: Sequence[str] = (),
        base_url: str | None = None,
        api_key: str | None = None,
        instructions: str | None = None,
        tools: Sequence[str] = DEFAULT_TOOLS,
        gate_all_tools: bool = False,
        max_turns: int = 20,
        max_retries: int = 2,
        tracing: bool = False,
    ) -> None:
        unknown = sorted(set(tools) - set(DEFAULT_TOOLS))
        if unknown:
            raise ValueError(f"unknown tools {unknown} (the core has {list(DEFAULT_TOOLS)})")
        if not isinstance(max_turns, int) or max_turns < 1:
            raise ValueError(f"max_turns must be a positive integer: {max_turns!r}")
        self.model = model
        self.models = [model, *(m for m in models if m != model)]
        self.base_url = base_url
        self.api_key = api_key
        self.instructions = instructions
        self.tool_names = list(tools)
        self.gate_all_tools = gate_all_tools
        self.max_turns = max_turns
        self.max_retries = max_retries
        self.tracing = tracing
        self._version: str | None = None
        self._env: CoreEnvironment | None = None
        self._island: AsyncioIsland | None = None
        self._client: AsyncOpenAI | None = None
        self._own_tools: list[FunctionTool] = []
        self._host_tools: list[FunctionTool] = []
        self._history: list[Any] = []
        self._failed: set[str] = set()
        self._edited: dict[str, dict[str, Any]] = {}
        self._cancelled = False
        self._running: RunResultStreaming | None = None
        self._run_config: RunConfig | None = None
        self._mcp: MCPServerManager | None = None
        self._mcp_refused: dict[str, str] = {}

    @property
    def name(self) -> str:
        return SDK

    @property
    def version(self) -> str | None:
        return self._version

    @property
    def features(self) -> CoreFeatures:
        return CoreFeatures(
            thinking=True,
            tool_events=True,
            permission_requests=True,
            abort=True,
            host_tools=True,
            model_change=True,
            model_list=True,
        )

    @property
    def mcp_refused(self) -> Mapping[str, str]:
        return self._mcp_refused

    @property
    def model_state(self) -> ModelState:
        return ModelState(model=self.model)

    # ------------------------------------------------------------ lifecycle

    async def start(self, env: CoreEnvironment) -> None:
        try:
            from agents import RunConfig
            from openai import AsyncOpenAI

            from rawp_core_openai_agents._tools import workspace_tools
        except ImportError as exc:
            raise CoreError(INSTALL_HINT, code=AgentErrorCode.SPAWN_FAILED, fatal=True) from exc
        api_key = self.api_key or os.environ.get("OPENAI_API_KEY")
        if not api_key:
            raise CoreError(
                "the openai-agents core needs an API key: set OPENAI_API_KEY or api_key",
                code=AgentErrorCode.SPAWN_FAILED,
                fatal=True,
            )
        self._version = f"{SDK} {installed_version(SDK)}"
        self._env = env
        # Made once: each RunConfig makes a model provider, which reads the environment.
        self._run_config = RunConfig(tracing_disabled=not self.tracing)
        self._client = AsyncOpenAI(
            base_url=self.base_url, api_key=api_key, max_retries=self.max_retries
        )
        self._own_tools = workspace_tools(
            Path(env.workspace),
            self.tool_names,
            gate_all=self.gate_all_tools,
            failed=self._fail,
            edited=self._edited,
        )
        self._island = island = AsyncioIsland(f"rawp-openai-agents-{env.session_id}")
        if env.mcp_servers:
            from rawp_core_openai_agents._mcp import connect

            servers, workspace = env.mcp_servers, Path(env.workspace)
            self._mcp, self._mcp_refused = await island.call(lambda: connect(servers, workspace))

    async def publish_tools(self, tools: Sequence[HostTool]) -> None:
        from rawp_core_openai_agents._tools import host_tools

        self._host_tools = host_tools(tools, self._call_host, self._fail)

    async def set_model(self, model: str | None, thinking_level: str | None) -> ModelState:
        if model is not None:
            if model not in self.models:
                raise OperationRejected(
                    f"unknown model {model!r} (this core has {', '.join(self.models)})"
                )
            self.model = model
        return self.model_state

    async def list_models(self) -> list[ModelInfo]:
        return [ModelInfo(id=m) for m in self.models]

    async def cancel(self) -> None:
        self._cancelled = True
        if self._island is not None:
            self._island.call_soon(self._cancel_running)

    async def close(self) -> None:
        self._cancelled = True
        island, client, mcp = self._island, self._client, self._mcp
        self._island = self._client = self._mcp = None
        if island is None:
            return
        with anyio.CancelScope(shield=True):
            island.call_soon(self._cancel_running)
            if client is not None:
                await island.call(client.close)
            if mcp is not None:
                await island.call(mcp.cleanup_all)
            await island.stop()

    # ------------------------------------------------------------ a prompt

    async def run(self, prompt: str, permission: PermissionCallback) -> AsyncIterator[CoreEvent]:
        assert self._island is not None, "run() before start()"
        self._cancelled = False
        self._failed = set()
        self._edited.clear()
        translator = TurnTranslator(
            host_tools={t.name for t in self._host_tools}, failed_calls=self._failed
        )
        agent = self._agent()
        run_input: list[Any] | RunState[Any] = [
            *self._history,
            {"role": "user", "content": prompt},
        ]
        while True:
            end = _End()
            async with contextlib.aclosing(self._stream(agent, run_input, translator)) as streamed:
                async for item in streamed:
                    if isinstance(item, Finished):
                        end = item.value or _End(error=RuntimeError(f"stopped: {item.error!r}"))
                    else:
                        for event in item:
                            yield event
            if self._cancelled:
                yield Stopped("cancelled")
                return
            if end.error is not None:
                raise CoreError(f"the run failed: {end.error}") from end.error
            result = end.result
            assert result is not None
            if not result.interruptions:
                self._history = result.to_input_list()
                yield Stopped("end_turn")
                return
            items = list(result.interruptions)
            decisions = await _ask_all(items, permission)
            for pending, decision in zip(items, decisions, strict=True):
                if isinstance(decision, Deny):
                    self._failed.add(_call_id(pending))
                elif decision.updated_input is not None:
                    self._edited[_call_id(pending)] = dict(decision.updated_input)
            stops = any(isinstance(d, Deny) and d.stops_turn for d in decisions)
            if stops or self._cancelled:
                for pending, decision in zip(items, decisions, strict=True):
                    message = decision.message if isinstance(decision, Deny) else "not run"
                    yield ToolFinished(_call_id(pending), output=message, is_error=True)
                yield Stopped("cancelled")
                return
            assert end.state is not None
            run_input = _resume(end.state, items, decisions)

    def _stream(
        self, agent: Agent[Any], run_input: list[Any] | RunState[Any], translator: TurnTranslator
    ) -> AsyncGenerator[list[CoreEvent] | Finished[_End]]:
        """What one streamed run of the SDK gives, ending with its :class:`_End`."""
        assert self._island is not None

        async def drive(emit: Emit[list[CoreEvent]]) -> _End:
            return await self._drive(agent, run_input, translator, emit)

        return self._island.stream(drive, may_wait=_parts_only)

    async def _drive(
        self,
        agent: Agent[Any],
        run_input: list[Any] | RunState[Any],
        translator: TurnTranslator,
        emit: Emit[list[CoreEvent]],
    ) -> _End:
        """On the island: run the SDK streamed, emitting the translated events."""
        from agents import Runner

        try:
            result = Runner.run_streamed(
                agent, run_input, max_turns=self.max_turns, run_config=self._run_config
            )
            self._running = result
            if self._cancelled:
                result.cancel()
            async for event in result.stream_events():
                events = translator.translate(event)
                if events:
                    emit(events)
            emit(translator.close_block())
            state = result.to_state() if result.interruptions else None
            return _End(result=result, state=state)
        except Exception as exc:
            emit(translator.close_block())
            return _End(error=exc)
        finally:
            self._running = None

    def _agent(self) -> Agent[Any]:
        from agents import Agent, OpenAIChatCompletionsModel

        assert self._client is not None
        host_names = {t.name for t in self._host_tools}
        own = [t for t in self._own_tools if t.name not in host_names]
        return Agent(
            name="rawp",
            instructions=self.instructions,
            model=OpenAIChatCompletionsModel(model=self.model, openai_client=self._client),
            tools=[*own, *self._host_tools],
            mcp_servers=self._mcp.active_servers if self._mcp is not None else [],
        )

    def _cancel_running(self) -> None:
        if self._running is not None:
            self._running.cancel()

    def _fail(self, call_id: str) -> None:
        self._failed.add(call_id)

    async def _call_host(self, call: HostToolCall) -> HostToolOutcome:
        """On the island: the Master runs one of its tools (the host's loop asks it)."""
        env, island = self._env, self._island
        assert env is not None
        assert island is not None
        return await island.on_host(lambda: env.call_host_tool(call, None))


def _parts_only(events: list[CoreEvent]) -> bool:
    return all(isinstance(event, PARTS) for event in events)


def _call_id(item: ToolApprovalItem) -> str:
    call_id = field_of(item.raw_item, "call_id")
    return call_id if isinstance(call_id, str) else ""


async def _ask_all(
    items: Sequence[ToolApprovalItem], permission: PermissionCallback
) -> list[PermissionDecision]:
    """One PERMISSION question per interruption, all asked at once."""
    decisions: list[PermissionDecision] = [Deny("not answered", "failed")] * len(items)

    async def ask(i: int, item: ToolApprovalItem) -> None:
        tool_name = item.tool_name or str(field_of(item.raw_item, "name"))
        decisions[i] = await permission(
            PermissionRequest(
                tool_name=tool_name,
                tool_input=parse_arguments(field_of(item.raw_item, "arguments")),
                tool_call_id=_call_id(item),
                title=f"Run {tool_name}?",
            )
        )

    if len(items) == 1:
        await ask(0, items[0])  # no task group: the question is asked in this iteration
        return decisions
    async with anyio.create_task_group() as tg:
        for i, item in enumerate(items):
            tg.start_soon(ask, i, item)
    return decisions


def _resume(
    state: RunState[Any],
    items: Sequence[ToolApprovalItem],
    decisions: Sequence[PermissionDecision],
) -> RunState[Any]:
    """The paused run's state with each interruption approved or rejected (nothing runs
    on the island while the run is paused)."""
    for item, decision in zip(items, decisions, strict=True):
        if isinstance(decision, Allow):
            state.approve(item)
        else:
            state.reject(item, rejection_message=decision.message)
    return state
