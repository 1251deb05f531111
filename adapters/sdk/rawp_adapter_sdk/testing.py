"""An agent core whose replies are a function: a core to test against offline.

As pydantic-ai's ``FunctionModel`` answers with a user function, :class:`FunctionCore`
runs each prompt with ``function(prompt, run)``, an async generator of
:mod:`~rawp_adapter_sdk.events` that may ask permission through ``run.permission``::

    from rawp_adapter_sdk import Deny, PermissionRequest, SdkAdapter
    from rawp_adapter_sdk.events import TextChunk, ToolFinished, ToolStarted
    from rawp_adapter_sdk.testing import CoreRun, FunctionCore

    async def reply(prompt: str, run: CoreRun):
        yield TextChunk(0, f"You said: {prompt}")
        yield ToolStarted("call-1", "Bash", {"command": "ls"})
        decision = await run.permission(PermissionRequest("Bash", {"command": "ls"}, "call-1"))
        if isinstance(decision, Deny):
            yield ToolFinished("call-1", decision.message, is_error=True)
        else:
            yield ToolFinished("call-1", "README.md")

    adapter = SdkAdapter.for_core(FunctionCore(reply))

A core that compacts or plans is a subclass with ``compact`` / ``switch_mode`` methods
(:class:`~rawp_adapter_sdk.CompactingCore`, :class:`~rawp_adapter_sdk.ModeSwitchingCore`).
With ``host_tools`` / ``steering`` / ``follow_up`` in its features it takes the Master's
tools (kept in :attr:`FunctionCore.tools`; :func:`use_host_tool` calls one) and messages
into a running prompt (kept in :attr:`FunctionCore.steered`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio

from rawp_adapter_sdk._core import (
    CoreEnvironment,
    CoreFeatures,
    Deny,
    PermissionCallback,
    PermissionDecision,
    PermissionRequest,
)
from rawp_adapter_sdk.events import (
    CoreEvent,
    Stopped,
    TextChunk,
    TextEnd,
    ToolFinished,
    ToolStarted,
)
from rawp_adapters import HostToolCall
from rawp_adapters.frames import Delivery, HostTool


@dataclass(frozen=True, eq=False)
class CoreRun:
    """What a core function gets besides the prompt, for one run."""

    env: CoreEnvironment
    """The environment the core was started with (workspace, session id, log)."""
    permission: PermissionCallback
    """Asks the Master whether a tool may run; every decision is recorded in
    :attr:`FunctionCore.decisions`."""
    cancelled: anyio.Event
    """Set when the run is asked to stop; the function should then end with
    ``Stopped("cancelled")``."""


CoreFunction = Callable[[str, CoreRun], AsyncIterator[CoreEvent]]
"""Runs one prompt: an async generator of core events."""

_ALL_FEATURES = CoreFeatures(thinking=True, tool_events=True, permission_requests=True, abort=True)


def say(*parts: str, index: int = 0) -> CoreFunction:
    """A reply that streams each of ``parts`` as one chunk of text block ``index``, then
    the whole text as its end."""
    text = "".join(parts)

    async def function(prompt: str, run: CoreRun) -> AsyncIterator[CoreEvent]:
        for part in parts:
            yield TextChunk(index, part)
        yield TextEnd(index, text)

    return function


def ask_permission(
    tool_name: str,
    tool_input: Mapping[str, Any] | None = None,
    *,
    call_id: str = "call-1",
    output: str | None = None,
) -> CoreFunction:
    """A reply that calls ``tool_name`` once, asking permission first.

    Allowed, the call's result is ``output`` (by default ``ran <tool_name>``); denied, it
    is an error with the deny message, and a denial that stops the turn (abort, session
    end) ends it ``cancelled``.
    """
    given_input = dict(tool_input or {})

    async def function(prompt: str, run: CoreRun) -> AsyncIterator[CoreEvent]:
        yield ToolStarted(call_id, tool_name, given_input)
        decision = await run.permission(PermissionRequest(tool_name, given_input, call_id))
        if isinstance(decision, Deny):
            yield ToolFinished(call_id, decision.message, is_error=True)
            yield Stopped("cancelled" if decision.stops_turn else "end_turn")
        else:
            yield ToolFinished(call_id, f"ran {tool_name}" if output is None else output)

    return function


def use_host_tool(
    tool_name: str, tool_input: Mapping[str, Any], *, call_id: str = "host-1"
) -> CoreFunction:
    """A reply that calls the Master's tool ``tool_name`` once (asking permission first),
    streams each piece of its progress as text block 0, then says the outcome's text as
    block 1 (``error: ...`` when it is an error)."""

    async def function(prompt: str, run: CoreRun) -> AsyncIterator[CoreEvent]:
        progress: list[str] = []

        async def on_progress(output: str) -> None:
            progress.append(output)

        call = HostToolCall(call_id, tool_name, tool_input, permission=True)
        outcome = await run.env.call_host_tool(call, on_progress)
        for output in progress:
            yield TextChunk(0, output)
        said = f"error: {outcome.text}" if outcome.is_error else outcome.text
        yield TextChunk(1, said)
        yield TextEnd(1, said)

    return function


def stall(text: str | None = None) -> CoreFunction:
    """A reply that streams ``text`` (if any) as one chunk, then waits until the run is
    cancelled and stops ``cancelled``."""

    async def function(prompt: str, run: CoreRun) -> AsyncIterator[CoreEvent]:
        if text is not None:
            yield TextChunk(0, text)
        await run.cancelled.wait()
        yield Stopped("cancelled")

    return function


class FunctionCore:
    """An :class:`~rawp_adapter_sdk.AgentCore` whose every prompt is run by
    ``function(prompt, run)`` (by default :func:`say` ``("Hel", "lo")``).

    ``name``, ``version`` and ``features`` are what the adapter reports (by default every
    feature but compaction and plan mode). After the session, :attr:`env`,
    :attr:`prompts`, :attr:`decisions`, :attr:`cancelled` and :attr:`closed` say what it
    was asked.
    """

    def __init__(
        self,
        function: CoreFunction | None = None,
        *,
        name: str = "function",
        version: str | None = None,
        features: CoreFeatures = _ALL_FEATURES,
    ) -> None:
        self.function: CoreFunction = function or say("Hel", "lo")
        self._name = name
        self._version = version
        self._features = features
        self.env: CoreEnvironment | None = None
        self.prompts: list[str] = []
        self.decisions: dict[str, PermissionDecision] = {}
        """Every permission decision, by the request's ``tool_call_id`` (else its tool)."""
        self.cancelled = anyio.Event()
        """The running (or last) run's :attr:`CoreRun.cancelled`."""
        self.tools: list[HostTool] = []
        self.steered: list[tuple[str, Delivery]] = []
        self.closed = False

    @property
    def name(self) -> str:
        return self._name

    @property
    def version(self) -> str | None:
        return self._version

    @property
    def features(self) -> CoreFeatures:
        return self._features

    async def start(self, env: CoreEnvironment) -> None:
        self.env = env

    def run(self, prompt: str, permission: PermissionCallback) -> AsyncIterator[CoreEvent]:
        assert self.env is not None, "run() before start()"
        self.prompts.append(prompt)
        if self.cancelled.is_set():
            self.cancelled = anyio.Event()

        async def recorded(request: PermissionRequest) -> PermissionDecision:
            decision = await permission(request)
            self.decisions[request.tool_call_id or request.tool_name] = decision
            return decision

        return self.function(prompt, CoreRun(self.env, recorded, self.cancelled))

    async def cancel(self) -> None:
        self.cancelled.set()

    async def publish_tools(self, tools: Sequence[HostTool]) -> None:
        self.tools = list(tools)

    async def steer(self, text: str, delivery: Delivery) -> None:
        self.steered.append((text, delivery))

    async def close(self) -> None:
        self.closed = True


__all__ = [
    "CoreFunction",
    "CoreRun",
    "FunctionCore",
    "ask_permission",
    "say",
    "stall",
    "use_host_tool",
]
