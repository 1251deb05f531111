"""The ``pydantic-ai`` SDK core: a pydantic-ai ``Agent`` on an OpenAI-compatible Chat
Completions model, behind the ``sdk`` adapter.

pydantic-ai is imported when the core starts, so that a missing SDK is one line naming
what to install.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from rawp_adapter_sdk import CoreEnvironment, CoreError, CoreFeatures, PermissionCallback
from rawp_adapter_sdk.events import CoreEvent
from rawp_adapter_sdk.islands import AsyncioIsland

from rawp_adapters import ModelState, OperationRejected
from rawp_adapters.frames import AgentErrorCode, HostTool, ModelInfo

if TYPE_CHECKING:
    from rawp_core_pydantic_ai._mcp import McpToolsets
    from rawp_core_pydantic_ai._turn import Conversation

SDK_DISTRIBUTION = "pydantic-ai-slim"
INSTALL_HINT = "the pydantic-ai core needs pydantic-ai: pip install rawp-core-pydantic-ai"
DEFAULT_TOOLS = ("write",)
SDK_THREAD = "rawp-pydantic-ai"
"""The name of the SDK's thread, on trio (on asyncio it runs on the session's loop)."""


class PydanticAiCore:
    """Options (``core_options``): ``model`` (the model's name at the server),
    ``base_url`` and ``api_key`` of the OpenAI-compatible server (default: the
    ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY`` environment, as the SDK reads them),
    ``models`` (those ``control.model.set`` takes besides ``model``),
    ``instructions``, ``tools`` (the core's own tools to offer; default ``["write"]``, a
    file write inside the workspace asked about first) and ``max_retries`` (of the
    OpenAI client, default 2)."""

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        models: Sequence[str] | None = None,
        instructions: str | None = None,
        tools: Sequence[str] = DEFAULT_TOOLS,
        max_retries: int = 2,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise ValueError(f"model must be a model name: {model!r}")
        unknown = [name for name in tools if name not in DEFAULT_TOOLS]
        if isinstance(tools, str) or unknown:
            raise ValueError(f"tools must name tools of {list(DEFAULT_TOOLS)}: {tools!r}")
        if not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError(f"max_retries must be a non-negative integer: {max_retries!r}")
        self._model = model
        self._models = list(dict.fromkeys([model, *(models or ())]))
        self._base_url = base_url
        self._api_key = api_key
        self._instructions = instructions
        self._tools = list(tools)
        self._max_retries = max_retries
        self._island: AsyncioIsland | None = None
        self._conversation: Conversation | None = None
        self._host_tools: list[HostTool] = []
        self._mcp: McpToolsets | None = None

    @property
    def name(self) -> str:
        return "pydantic-ai"

    @property
    def version(self) -> str | None:
        try:
            return f"{SDK_DISTRIBUTION} {importlib.metadata.version(SDK_DISTRIBUTION)}"
        except importlib.metadata.PackageNotFoundError:
            return None

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

    async def start(self, env: CoreEnvironment) -> None:
        try:
            from rawp_core_pydantic_ai._agent import ModelOptions, SdkAgent
            from rawp_core_pydantic_ai._turn import Conversation
        except ImportError as exc:
            raise CoreError(INSTALL_HINT, code=AgentErrorCode.SPAWN_FAILED, fatal=True) from exc
        options = ModelOptions(
            model=self._model,
            base_url=self._base_url,
            api_key=self._api_key,
            max_retries=self._max_retries,
            instructions=self._instructions,
            tools=self._tools,
        )
        self._island = island = AsyncioIsland(SDK_THREAD)
        workspace = Path(env.workspace)

        servers = env.mcp_servers

        async def build() -> SdkAgent:
            if not servers:
                return SdkAgent(options, workspace)
            from rawp_core_pydantic_ai._mcp import McpToolsets

            self._mcp = await McpToolsets.connect(servers, workspace)
            return SdkAgent(options, workspace, self._mcp.toolsets)

        try:
            sdk = await island.call(build)
        except BaseException:
            self._island = None
            await island.stop()
            raise
        self._conversation = Conversation(sdk=sdk, island=island, env=env, model=self._model)
        self._conversation.host_tools = self._host_tools

    async def publish_tools(self, tools: Sequence[HostTool]) -> None:
        self._host_tools = list(tools)
        if self._conversation is not None:
            self._conversation.host_tools = self._host_tools

    @property
    def mcp_refused(self) -> Mapping[str, str]:
        return self._mcp.refused if self._mcp is not None else {}

    @property
    def model_state(self) -> ModelState:
        return ModelState(model=self._model)

    async def set_model(self, model: str | None, thinking_level: str | None) -> ModelState:
        if thinking_level is not None:
            raise OperationRejected("the pydantic-ai core has no thinking levels")
        if model is not None:
            if model not in self._models:
                raise OperationRejected(
                    f"unknown model {model!r} (known: {', '.join(self._models)})"
                )
            self._model = model
            if self._conversation is not None:
                self._conversation.model = model
        return self.model_state

    async def list_models(self) -> list[ModelInfo]:
        return [ModelInfo(id=name, provider="openai-compatible") for name in self._models]

    async def run(self, prompt: str, permission: PermissionCallback) -> AsyncIterator[CoreEvent]:
        from rawp_core_pydantic_ai._turn import run_turn

        conversation = self._conversation
        if conversation is None:
            raise CoreError("run() before start()")
        conversation.cancelled = anyio.Event()
        async for event in run_turn(conversation, prompt, permission):
            yield event

    async def cancel(self) -> None:
        if self._conversation is not None:
            self._conversation.cancelled.set()
        if self._island is not None:
            self._island.cancel_jobs()

    async def close(self) -> None:
        island, conversation, mcp = self._island, self._conversation, self._mcp
        self._island = self._conversation = None
        if island is None:
            return
        island.cancel_jobs()
        with anyio.CancelScope(shield=True):
            if conversation is not None:
                await island.call(conversation.sdk.close)
            if mcp is not None:
                await island.call(mcp.close)
        await island.stop()
