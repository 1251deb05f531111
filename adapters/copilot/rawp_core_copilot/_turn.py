"""One turn of the core: the prompt sent to the Copilot session, its events streamed
until the session is idle, and each permission question of the CLI put to the Master
(the CLI waits for the answer; one not given in time is a denial)."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import anyio
from copilot.generated.rpc import (
    PermissionDecision,
    PermissionDecisionApproveOnce,
    PermissionDecisionReject,
)
from copilot.tools import ToolResult
from rawp_adapter_sdk import (
    Allow,
    CoreEnvironment,
    PermissionCallback,
    PermissionRequest,
)
from rawp_adapter_sdk.events import CoreEvent, Stopped
from rawp_adapter_sdk.islands import AsyncioIsland, Outbox

from rawp_adapters import HostToolCall
from rawp_core_copilot._exit import CliExited
from rawp_core_copilot._runtime import Asked, HostCalled, Runtime, describe
from rawp_core_copilot._translate import TurnTranslator, tool_input

T = TypeVar("T")

STOPPED = "The turn was stopped before this tool ran."
EDITED_INPUT = "The user's edited input cannot be given to this tool; it did not run."


async def run_turn(
    thread: AsyncioIsland,
    runtime: Runtime,
    env: CoreEnvironment,
    prompt: str,
    permission: PermissionCallback,
    cancelled: Callable[[], bool],
) -> AsyncIterator[CoreEvent]:
    inbox: Outbox[Any] = Outbox()
    translator = TurnTranslator(host_tools={tool.name for tool in runtime.host_tools})
    try:
        await thread.call(functools.partial(runtime.send, prompt, inbox))
        async for received in inbox.receive:
            items = [received]
            if isinstance(received, Asked | HostCalled):
                items = await _answer_all(received, thread, env, permission, inbox)
            for item in items:
                if isinstance(item, CliExited):
                    raise item.error
                for event in translator.translate(item, cancelled=cancelled()):
                    yield event
                    if isinstance(event, Stopped):
                        return
    finally:
        thread.call_soon(runtime.end_turn)
        inbox.close()


async def _answer_all(
    first: Asked | HostCalled,
    thread: AsyncioIsland,
    env: CoreEnvironment,
    permission: PermissionCallback,
    inbox: Outbox[Any],
) -> list[Any]:
    """Answer ``first`` and every question or host call that comes while one is open, all
    at once (the CLI asks about parallel calls together, so the Master may answer them in
    any order); what else came meanwhile is returned, in order, once all are answered."""
    came: list[Any] = []
    async with anyio.create_task_group() as group:
        open_calls = 0

        async def answer(item: Asked | HostCalled) -> None:
            nonlocal open_calls
            try:
                if isinstance(item, Asked):
                    await _ask(thread, item, permission, inbox)
                else:
                    await _call_host(thread, env, item, inbox)
            finally:
                open_calls -= 1
                if open_calls == 0:
                    group.cancel_scope.cancel()  # stop reading: all are answered

        def start(item: Asked | HostCalled) -> None:
            nonlocal open_calls
            open_calls += 1
            group.start_soon(answer, item)

        start(first)
        async for item in inbox.receive:
            if isinstance(item, Asked | HostCalled):
                start(item)
            else:
                came.append(item)
    return came


async def _ask(
    thread: AsyncioIsland, asked: Asked, permission: PermissionCallback, inbox: Outbox[Any]
) -> None:
    """Put the question to the Master; reply to the CLI whatever happens (a denial if
    the turn stops first). The question is withdrawn when the CLI is gone."""
    name, arguments, call_id = describe(asked.request)
    decision: PermissionDecision = PermissionDecisionReject(feedback=STOPPED)
    question = PermissionRequest(
        tool_name=name, tool_input=arguments, tool_call_id=call_id, title=f"Run {name}?"
    )
    try:
        answer = await _unless_last(inbox, permission(question))
        if answer is None:
            return
        if not isinstance(answer, Allow):
            decision = PermissionDecisionReject(feedback=answer.message)
        elif answer.updated_input is None:
            decision = PermissionDecisionApproveOnce()
        else:
            decision = PermissionDecisionReject(feedback=EDITED_INPUT)
    finally:
        thread.call_soon(functools.partial(_reply, asked.answer, decision))


async def _call_host(
    thread: AsyncioIsland, env: CoreEnvironment, called: HostCalled, inbox: Outbox[Any]
) -> None:
    """Have the session call the Master's tool (asking first); its result goes to the CLI
    whatever happens (a failure if the turn stops first). The call is cancelled when the
    CLI is gone."""
    result = ToolResult(STOPPED, result_type="failure")
    try:
        call = HostToolCall(
            called.call_id, called.tool_name, tool_input(called.arguments), permission=True
        )
        outcome = await _unless_last(inbox, env.call_host_tool(call, None))
        if outcome is None:
            return
        result = ToolResult(outcome.text, result_type="failure" if outcome.is_error else "success")
    finally:
        thread.call_soon(functools.partial(_reply, called.answer, result))


async def _unless_last(inbox: Outbox[Any], waited: Awaitable[T]) -> T | None:
    """What ``waited`` gives, or None once the inbox's last item is in (it is cancelled)."""
    given: list[T] = []
    async with anyio.create_task_group() as group:

        async def withdraw() -> None:
            await inbox.last.wait()
            group.cancel_scope.cancel()

        group.start_soon(withdraw)
        given.append(await waited)
        group.cancel_scope.cancel()
    return given[0] if given else None


def _reply(answer: asyncio.Future[T], value: T) -> None:
    if not answer.done():
        answer.set_result(value)
