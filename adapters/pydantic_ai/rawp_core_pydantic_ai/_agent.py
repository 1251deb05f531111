"""The pydantic-ai side of the core: an ``Agent`` on an OpenAI-compatible model, run
one step of a turn at a time on the core's asyncio island (``rawp_adapter_sdk.islands``).

A step is one pydantic-ai run: it ends with the model's answer, or with
``DeferredToolRequests`` when the model called a tool that needs the Master (a gated
tool to approve, a Master's tool to call); the turn's next step resumes the run from its
messages with the ``DeferredToolResults``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from openai import AsyncOpenAI
from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults
from pydantic_ai.messages import AgentStreamEvent, ModelMessage
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.run import AgentRunResultEvent
from pydantic_ai.toolsets import AbstractToolset
from pydantic_ai.toolsets.external import ExternalToolset
from pydantic_ai.usage import RunUsage
from rawp_adapter_sdk.events import CoreEvent
from rawp_adapter_sdk.islands import Emit

from rawp_core_pydantic_ai._tools import builtin_toolset
from rawp_core_pydantic_ai._translate import TurnTranslator

UNUSED_API_KEY = "unused"
"""The key sent to a server that needs none (a base URL given, no key anywhere)."""


@dataclass(frozen=True, slots=True)
class Step:
    """How one run ended."""

    output: str | DeferredToolRequests
    messages: list[ModelMessage]
    usage: RunUsage


@dataclass(frozen=True, slots=True)
class ModelOptions:
    model: str
    base_url: str | None
    api_key: str | None
    max_retries: int
    instructions: str | None
    tools: Sequence[str]


class SdkAgent:
    """The ``Agent`` of one session. Lives on the core's island."""

    def __init__(
        self,
        options: ModelOptions,
        workspace: Path,
        mcp_toolsets: Sequence[AbstractToolset[None]] = (),
    ) -> None:
        api_key = options.api_key or os.environ.get("OPENAI_API_KEY") or UNUSED_API_KEY
        self._client = AsyncOpenAI(
            base_url=options.base_url, api_key=api_key, max_retries=options.max_retries
        )
        self._provider = OpenAIProvider(openai_client=self._client)
        self._models: dict[str, OpenAIChatModel] = {}
        self.agent: Agent[None, str | DeferredToolRequests] = Agent(
            output_type=[str, DeferredToolRequests],
            instructions=options.instructions,
            toolsets=[builtin_toolset(workspace, options.tools), *mcp_toolsets],
        )

    def model(self, name: str) -> OpenAIChatModel:
        """The model ``name``, made once (making one takes the best part of a
        millisecond, which each step would add to the Master's wait)."""
        model = self._models.get(name)
        if model is None:
            model = self._models[name] = OpenAIChatModel(name, provider=self._provider)
        return model

    async def step(
        self,
        emit: Emit[CoreEvent],
        *,
        model: str,
        prompt: str | None,
        history: list[ModelMessage],
        results: DeferredToolResults | None,
        host_tools: ExternalToolset[None] | None,
        translator: TurnTranslator,
    ) -> Step:
        """One run, its events translated and emitted as they come."""
        async with self.agent.run_stream_events(
            prompt,
            model=self.model(model),
            message_history=history,
            deferred_tool_results=results,
            toolsets=[host_tools] if host_tools is not None else None,
        ) as events:
            async for event in events:
                if not isinstance(event, AgentRunResultEvent):
                    _emit_all(emit, translator, event)
            result = events.result
            if result is None:
                raise RuntimeError("the pydantic-ai run ended without its result")
            return Step(result.output, events.all_messages(), events.usage)

    async def close(self) -> None:
        await self._client.close()


def _emit_all(emit: Emit[CoreEvent], translator: TurnTranslator, event: AgentStreamEvent) -> None:
    for core_event in translator.translate(event):
        emit(core_event)
