"""A scripted agent core for the adapter's and the bridge's tests: each prompt runs a
script (an async generator) that can stream events and ask for permissions."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
from rawp_adapter_sdk import (
    Compaction,
    CoreEnvironment,
    CoreError,
    CoreEvent,
    CoreFeatures,
    Deny,
    PermissionCallback,
    PermissionDecision,
    PermissionRequest,
    Stop,
    TextDelta,
    TextDone,
    ToolEnd,
    ToolStart,
)

from rawp_adapters.frames import AgentStateChangedFrame, ClientFrame, Mode
from rawp_adapters.testing import SessionDriver

Script = Callable[["ScriptedCore", str, PermissionCallback], AsyncIterator[CoreEvent]]

ALL_FEATURES = CoreFeatures(thinking=True, tool_events=True, permission_requests=True, abort=True)


class ScriptedCore:
    def __init__(self, script: Script, *, features: CoreFeatures = ALL_FEATURES) -> None:
        self.script = script
        self._features = features
        self.env: CoreEnvironment | None = None
        self.prompts: list[str] = []
        self.decisions: dict[str, PermissionDecision] = {}
        self.cancelled = anyio.Event()
        self.closed = False

    @property
    def name(self) -> str:
        return "scripted"

    @property
    def version(self) -> str | None:
        return "0"

    @property
    def features(self) -> CoreFeatures:
        return self._features

    async def start(self, env: CoreEnvironment) -> None:
        self.env = env

    def run(self, prompt: str, permission: PermissionCallback) -> AsyncIterator[CoreEvent]:
        self.prompts.append(prompt)
        return self.script(self, prompt, permission)

    async def cancel(self) -> None:
        self.cancelled.set()

    async def close(self) -> None:
        self.closed = True

    async def ask(
        self, permission: PermissionCallback, call_id: str, tool_input: dict[str, Any] | None = None
    ) -> PermissionDecision:
        """Ask for one tool call and remember the answer under ``call_id``."""
        decision = await permission(
            PermissionRequest(
                tool_name="Bash",
                tool_input=tool_input or {"command": call_id},
                tool_call_id=call_id,
            )
        )
        self.decisions[call_id] = decision
        return decision


def asking(*call_ids: str) -> Script:
    """Start a tool call per id, ask for all of them at once, then end each call."""

    async def script(
        core: ScriptedCore, prompt: str, permission: PermissionCallback
    ) -> AsyncIterator[CoreEvent]:
        for call_id in call_ids:
            yield ToolStart(call_id=call_id, tool_name="Bash", input={"command": call_id})
        async with anyio.create_task_group() as tg:
            for call_id in call_ids:
                tg.start_soon(core.ask, permission, call_id)
        stops = False
        for call_id in call_ids:
            decision = core.decisions[call_id]
            if isinstance(decision, Deny):
                stops = stops or decision.stops_turn
                yield ToolEnd(call_id=call_id, output=decision.message, is_error=True)
            else:
                yield ToolEnd(call_id=call_id, output=f"ran {call_id}")
        yield Stop("cancelled" if stops else "end_turn")

    return script


async def until_cancelled(
    core: ScriptedCore, prompt: str, permission: PermissionCallback
) -> AsyncIterator[CoreEvent]:
    yield TextDelta(0, "working")
    await core.cancelled.wait()
    yield Stop("cancelled")


async def say_hello(
    core: ScriptedCore, prompt: str, permission: PermissionCallback
) -> AsyncIterator[CoreEvent]:
    yield TextDelta(0, "Hel")
    yield TextDelta(0, "lo")
    yield TextDone(0, "Hello")


def hello_core(*, greeting: str = "Hello") -> ScriptedCore:
    """A factory as a third party would register one (used by import path in tests)."""

    async def greet(
        core: ScriptedCore, prompt: str, permission: PermissionCallback
    ) -> AsyncIterator[CoreEvent]:
        yield TextDelta(0, greeting)

    return ScriptedCore(greet, features=CoreFeatures(thinking=True))


class CompactingPlanningCore(ScriptedCore):
    """A scripted core that can also compact (answering ``compaction``, or raising
    ``compact_error``) and switch modes (each mode it switched to can be received from
    ``modes``)."""

    def __init__(
        self,
        *,
        compaction: Compaction | None = None,
        compact_error: CoreError | None = None,
        mode_error: CoreError | None = None,
    ) -> None:
        super().__init__(say_hello)
        self.compaction = compaction or Compaction()
        self.compact_error = compact_error
        self.mode_error = mode_error
        self.instructions: list[str | None] = []
        self._switched, self.modes = anyio.create_memory_object_stream[Mode](16)

    async def compact(self, instructions: str | None) -> Compaction:
        self.instructions.append(instructions)
        if self.compact_error is not None:
            raise self.compact_error
        return self.compaction

    async def switch_mode(self, mode: Mode) -> None:
        if self.mode_error is not None:
            raise self.mode_error
        await self._switched.send(mode)


async def idle_after(d: SessionDriver, frame: ClientFrame) -> None:
    """Wait until the session is idle again after ``frame`` (e.g. the end of a compaction,
    before which a prompt would be refused)."""
    await d.wait_for(
        AgentStateChangedFrame,
        where=lambda f: f.payload.state == "idle",
        after=d.frames.index(frame),
    )
