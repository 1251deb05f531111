"""One turn of the core: steps of the SDK run until the model answers, the Master's
answers to each step's deferred tool calls in between (run side by side)."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
from pydantic_ai import DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied
from pydantic_ai.exceptions import ToolFailed
from pydantic_ai.messages import ModelMessage, ToolCallPart, repair_messages
from pydantic_ai.usage import RunUsage
from rawp_adapter_sdk import (
    CoreEnvironment,
    CoreError,
    Deny,
    PermissionCallback,
    PermissionRequest,
)
from rawp_adapter_sdk.events import PARTS, CoreEvent, Stopped, UsageReport
from rawp_adapter_sdk.islands import AsyncioIsland, Finished

from rawp_adapters import HostToolCall
from rawp_adapters.frames import HostTool
from rawp_core_pydantic_ai._agent import SdkAgent, Step
from rawp_core_pydantic_ai._tools import host_toolset
from rawp_core_pydantic_ai._translate import TurnTranslator, tool_input

STOPPED = "The turn was stopped before this tool ran."


@dataclass
class Conversation:
    """What lasts from turn to turn (touched only between the SDK's steps)."""

    sdk: SdkAgent
    island: AsyncioIsland
    env: CoreEnvironment
    model: str
    history: list[ModelMessage] = field(default_factory=list)
    host_tools: Sequence[HostTool] = ()
    cancelled: anyio.Event = field(default_factory=anyio.Event)


@dataclass
class _Answers:
    approvals: dict[str, bool | ToolApproved | ToolDenied] = field(default_factory=dict)
    calls: dict[str, Any] = field(default_factory=dict)
    stop: bool = False


async def run_turn(
    conversation: Conversation, prompt: str, permission: PermissionCallback
) -> AsyncIterator[CoreEvent]:
    c = conversation
    translator = TurnTranslator(host_tools={tool.name for tool in c.host_tools})
    host = host_toolset(c.host_tools) if c.host_tools else None
    history = c.history
    user_prompt: str | None = prompt
    results: DeferredToolResults | None = None
    while True:
        job = functools.partial(
            c.sdk.step,
            model=c.model,
            prompt=user_prompt,
            history=history,
            results=results,
            host_tools=host,
            translator=translator,
        )
        step: Step | None = None
        failure: BaseException | None = None
        stream: AsyncGenerator[CoreEvent | Finished[Step]] = c.island.stream(job, may_wait=_a_part)
        async with contextlib.aclosing(stream) as items:
            async for item in items:
                if isinstance(item, Finished):
                    step, failure = item.value, item.error
                else:
                    yield item
        if step is None or c.cancelled.is_set():
            c.history = repair_messages(history)
            for event in translator.finish_open(STOPPED):
                yield event
            if c.cancelled.is_set():
                yield Stopped("cancelled")
                return
            raise CoreError(_describe(failure)) from failure
        yield _usage(step.usage)
        history = step.messages
        if not isinstance(step.output, DeferredToolRequests):
            c.history = history
            yield Stopped("end_turn")
            return
        answers = await _settle(c.env, step.output, permission)
        if answers.stop or c.cancelled.is_set():
            c.history = repair_messages(history)
            for event in translator.finish_open(STOPPED):
                yield event
            yield Stopped("cancelled")
            return
        user_prompt = None
        results = DeferredToolResults(approvals=dict(answers.approvals), calls=answers.calls)


def _a_part(event: object) -> bool:
    return isinstance(event, PARTS)


async def _settle(
    env: CoreEnvironment, requests: DeferredToolRequests, permission: PermissionCallback
) -> _Answers:
    """Ask the Master about every gated call and have it run every call of its tools,
    all at once (the Master may answer in any order)."""
    answers = _Answers()

    async def approve(part: ToolCallPart) -> None:
        arguments = tool_input(part)
        decision = await permission(
            PermissionRequest(
                tool_name=part.tool_name,
                tool_input=arguments,
                tool_call_id=part.tool_call_id,
                title=f"Run {part.tool_name}?",
            )
        )
        if isinstance(decision, Deny):
            answers.approvals[part.tool_call_id] = ToolDenied(decision.message)
            answers.stop = answers.stop or decision.stops_turn
        elif decision.updated_input is not None:
            answers.approvals[part.tool_call_id] = ToolApproved(
                override_args=dict(decision.updated_input)
            )
        else:
            answers.approvals[part.tool_call_id] = True

    async def call(part: ToolCallPart) -> None:
        request = HostToolCall(part.tool_call_id, part.tool_name, tool_input(part), permission=True)
        outcome = await env.call_host_tool(request, None)
        answers.calls[part.tool_call_id] = (
            ToolFailed(outcome.text) if outcome.is_error else (outcome.text)
        )

    if len(requests.approvals) == 1 and not requests.calls:
        await approve(requests.approvals[0])  # no task group: asked in this iteration
        return answers
    async with anyio.create_task_group() as tg:
        for part in requests.approvals:
            tg.start_soon(approve, part)
        for part in requests.calls:
            tg.start_soon(call, part)
    return answers


def _usage(usage: RunUsage) -> UsageReport:
    return UsageReport(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
    )


def _describe(failure: BaseException | None) -> str:
    if failure is None:
        return "the pydantic-ai run ended without a result"
    return f"{type(failure).__name__}: {failure}"
