"""The ``copilot`` SDK core: the GitHub Copilot SDK driving the Copilot CLI against an
OpenAI-compatible (or Azure, Anthropic) provider of the options, behind the ``sdk``
adapter.

The SDK is imported when the core starts, so that a missing SDK is one line naming what
to install.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import anyio
from rawp_adapter_sdk import (
    Compaction,
    CoreEnvironment,
    CoreError,
    CoreFeatures,
    PermissionCallback,
)
from rawp_adapter_sdk.events import CoreEvent
from rawp_adapter_sdk.islands import AsyncioIsland

from rawp_adapters import ModelState, OperationRejected
from rawp_adapters.frames import AgentErrorCode, Delivery, HostTool, ModelInfo

if TYPE_CHECKING:
    from rawp_core_copilot._runtime import Runtime, SendMode

SDK_DISTRIBUTION = "github-copilot-sdk"
INSTALL_HINT = "the copilot core needs the GitHub Copilot SDK: pip install rawp-core-copilot"
DEFAULT_TOOLS = ("write",)
PROVIDER_TYPES = ("openai", "azure", "anthropic")
WIRE_APIS = ("completions", "responses")
SDK_THREAD = "rawp-copilot"
"""The SDK's loop runs in a thread of this name on either backend: on the session's
loop, stopping the SDK would block it (it joins its reader threads, up to 1 s each)."""


def _check(name: str, value: str, allowed: Sequence[str]) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {list(allowed)}: {value!r}")


class CopilotCore:
    """Options (``core_options``): ``model`` (the model's name at the provider),
    ``base_url`` and ``api_key`` of the provider (default: ``COPILOT_PROVIDER_BASE_URL``
    and ``COPILOT_PROVIDER_API_KEY``), ``provider_type`` (``openai``, ``azure`` or
    ``anthropic``), ``wire_api`` (``completions`` or ``responses``), ``cli_path`` (the
    Copilot CLI; default ``COPILOT_CLI_PATH``), ``tools`` (the core's own tools to
    offer; default ``["write"]``, a file write inside the workspace asked about first)
    and ``models`` (those ``control.model.set`` takes besides ``model``).
    The CLI runs with ``COPILOT_OFFLINE=true`` and no GitHub login."""

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        provider_type: Literal["openai", "azure", "anthropic"] = "openai",
        wire_api: Literal["completions", "responses"] = "completions",
        cli_path: str | None = None,
        tools: Sequence[str] = DEFAULT_TOOLS,
        models: Sequence[str] = (),
    ) -> None:
        if not isinstance(model, str) or not model:
            raise ValueError(f"model must be a model name: {model!r}")
        base_url = base_url or os.environ.get("COPILOT_PROVIDER_BASE_URL")
        if not base_url:
            raise ValueError("base_url (or COPILOT_PROVIDER_BASE_URL) names the provider")
        unknown = [name for name in tools if name not in DEFAULT_TOOLS]
        if isinstance(tools, str) or unknown:
            raise ValueError(f"tools must name tools of {list(DEFAULT_TOOLS)}: {tools!r}")
        if isinstance(models, str) or not all(isinstance(m, str) and m for m in models):
            raise ValueError(f"models must be a list of model names: {models!r}")
        self._model = model
        self._models = list(dict.fromkeys([model, *models]))
        self._base_url = base_url
        self._api_key = api_key or os.environ.get("COPILOT_PROVIDER_API_KEY") or "unused"
        _check("provider_type", provider_type, PROVIDER_TYPES)
        _check("wire_api", wire_api, WIRE_APIS)
        self._provider_type = provider_type
        self._wire_api = wire_api
        self._cli_path = cli_path
        self._tools = list(tools)
        self._cli_version: str | None = None
        self._thread: AsyncioIsland | None = None
        self._runtime: Runtime | None = None
        self._home: Path | None = None
        self._cancelled = False
        self._env: CoreEnvironment | None = None
        self._host_tools: list[HostTool] = []
        self._mcp_refused: dict[str, str] = {}

    @property
    def name(self) -> str:
        return "copilot"

    @property
    def version(self) -> str | None:
        try:
            sdk = f"{SDK_DISTRIBUTION} {importlib.metadata.version(SDK_DISTRIBUTION)}"
        except importlib.metadata.PackageNotFoundError:
            return None
        cli = f"; @github/copilot {self._cli_version}" if self._cli_version else ""
        return sdk + cli

    @property
    def features(self) -> CoreFeatures:
        return CoreFeatures(
            thinking=True,
            tool_events=True,
            permission_requests=True,
            abort=True,
            host_tools=True,
            steering=True,
            follow_up=True,
            model_change=True,
            model_list=True,
        )

    @property
    def model_state(self) -> ModelState:
        return ModelState(model=self._model)

    @property
    def mcp_refused(self) -> Mapping[str, str]:
        return self._mcp_refused

    async def start(self, env: CoreEnvironment) -> None:
        try:
            from rawp_core_copilot._cli import cli_version, find_cli
            from rawp_core_copilot._runtime import Runtime, Settings
        except ImportError as exc:
            raise CoreError(INSTALL_HINT, code=AgentErrorCode.SPAWN_FAILED, fatal=True) from exc
        cli = find_cli(self._cli_path)
        self._cli_version = await cli_version(cli)
        self._home = Path(tempfile.mkdtemp(prefix="rawp-copilot-"))
        settings = Settings(
            model=self._model,
            base_url=self._base_url,
            api_key=self._api_key,
            provider_type=self._provider_type,
            wire_api=self._wire_api,
            tools=self._tools,
            mcp_servers=env.mcp_servers,
            cli=cli,
            home=self._home,
            workspace=Path(env.workspace),
        )
        self._thread = thread = AsyncioIsland(SDK_THREAD, own_thread=True)
        self._runtime = runtime = Runtime(settings)
        runtime.host_tools = self._host_tools
        self._env = env
        try:
            await thread.call(runtime.open)
        except CoreError:
            await self.close()
            raise
        except Exception as exc:
            await self.close()
            raise CoreError(
                f"the Copilot CLI did not start: {exc}", code=AgentErrorCode.SPAWN_FAILED
            ) from exc
        self._mcp_refused = runtime.mcp.refused()

    async def publish_tools(self, tools: Sequence[HostTool]) -> None:
        self._host_tools = list(tools)
        if self._thread is not None and self._runtime is not None:
            await self._thread.call(functools.partial(self._runtime.publish, self._host_tools))

    async def run(self, prompt: str, permission: PermissionCallback) -> AsyncIterator[CoreEvent]:
        from rawp_core_copilot._turn import run_turn

        thread, runtime, env = self._thread, self._runtime, self._env
        if thread is None or runtime is None or env is None:
            raise CoreError("run() before start()")
        self._cancelled = False
        turn = run_turn(thread, runtime, env, prompt, permission, self._is_cancelled)
        async for event in turn:
            yield event

    async def steer(self, text: str, delivery: Delivery) -> None:
        thread, runtime = self._running()
        mode: SendMode = "immediate" if delivery == "steer" else "enqueue"
        await thread.call(functools.partial(runtime.steer, text, mode))

    async def set_model(self, model: str | None, thinking_level: str | None) -> ModelState:
        if thinking_level is not None:
            raise OperationRejected("the copilot core has no thinking levels")
        if model is not None:
            if model not in self._models:
                known = ", ".join(self._models)
                raise OperationRejected(f"unknown model {model!r} (known: {known})")
            thread, runtime = self._running()
            await thread.call(functools.partial(runtime.set_model, model))
            self._model = model
        return self.model_state

    async def list_models(self) -> list[ModelInfo]:
        return [ModelInfo(id=name, provider=self._provider_type) for name in self._models]

    async def compact(self, instructions: str | None) -> Compaction:
        thread, runtime = self._running()
        done = await thread.call(functools.partial(runtime.compact, instructions))
        if not done.success:
            raise CoreError("the Copilot CLI could not compact the conversation")
        return Compaction(summary=done.summary_content, compacted=done.messages_removed > 0)

    def _running(self) -> tuple[AsyncioIsland, Runtime]:
        if self._thread is None or self._runtime is None:
            raise CoreError("the copilot core is not running")
        return self._thread, self._runtime

    def _is_cancelled(self) -> bool:
        return self._cancelled

    async def cancel(self) -> None:
        self._cancelled = True
        if self._thread is not None and self._runtime is not None:
            await self._thread.call(self._runtime.abort)

    async def close(self) -> None:
        thread, runtime, home = self._thread, self._runtime, self._home
        self._thread = self._runtime = self._home = None
        try:
            if thread is not None and runtime is not None:
                with anyio.CancelScope(shield=True):
                    await thread.call(runtime.close)
        finally:
            if thread is not None:
                await thread.stop()
            if home is not None:
                shutil.rmtree(home, ignore_errors=True)
