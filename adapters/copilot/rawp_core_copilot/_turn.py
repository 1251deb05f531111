"""One turn of the core: the prompt sent to the Copilot session, its events streamed
until the session is idle, and each permission question of the CLI put to the Master
(the CLI waits for the answer; one not given in time is a denial)."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Callable

from copilot.generated.rpc import (
    PermissionDecision,
    PermissionDecisionApproveOnce,
    PermissionDecisionReject,
)
from rawp_adapter_sdk import Allow, PermissionCallback, PermissionRequest
from rawp_adapter_sdk.events import CoreEvent, Stopped

from rawp_core_copilot._runtime import Asked, Runtime, describe
from rawp_core_copilot._thread import Inbox, SdkThread
from rawp_core_copilot._translate import TurnTranslator

STOPPED = "The turn was stopped before this tool ran."
EDITED_INPUT = "The user's edited input cannot be given to this tool; it did not run."


async def run_turn(
    thread: SdkThread,
    runtime: Runtime,
    prompt: str,
    permission: PermissionCallback,
    cancelled: Callable[[], bool],
) -> AsyncIterator[CoreEvent]:
    inbox = Inbox()
    translator = TurnTranslator()
    try:
        await thread.call(functools.partial(runtime.send, prompt, inbox))
        async for item in inbox.receive:
            if isinstance(item, Asked):
                await _ask(thread, item, permission)
                continue
            for event in translator.translate(item, cancelled=cancelled()):
                yield event
                if isinstance(event, Stopped):
                    return
    finally:
        thread.call_soon(runtime.end_turn)
        inbox.close()


async def _ask(thread: SdkThread, asked: Asked, permission: PermissionCallback) -> None:
    """Put the question to the Master; reply to the CLI whatever happens (a denial if
    the turn stops first)."""
    name, arguments, call_id = describe(asked.request)
    decision: PermissionDecision = PermissionDecisionReject(feedback=STOPPED)
    try:
        answer = await permission(
            PermissionRequest(
                tool_name=name, tool_input=arguments, tool_call_id=call_id, title=f"Run {name}?"
            )
        )
        if not isinstance(answer, Allow):
            decision = PermissionDecisionReject(feedback=answer.message)
        elif answer.updated_input is None:
            decision = PermissionDecisionApproveOnce()
        else:
            decision = PermissionDecisionReject(feedback=EDITED_INPUT)
    finally:
        thread.call_soon(functools.partial(_reply, asked.answer, decision))


def _reply(answer: asyncio.Future[PermissionDecision], decision: PermissionDecision) -> None:
    if not answer.done():
        answer.set_result(decision)
