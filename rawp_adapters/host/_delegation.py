"""Delegation (DPS 1.0.0 §10): a host tool that runs a sub-agent through any installed
adapter, for the agent that calls it.

The rules, as a Master author can rely on them:

- The sub-agent may use at most the parent's tools: ``allowed_tools`` of the tool's
  input is checked against the parent's allowed set (the :class:`Delegation`'s
  ``allowed_tools``, narrowed by any delegation above it). Asking for a tool the
  parent may not use is refused (an error result naming it), not silently narrowed;
  leaving ``allowed_tools`` out gives the sub-agent the parent's set. The sub-agent's
  PERMISSION requests for other tools are denied without asking the Master, and where
  the adapter's settings can narrow its tools they are set (the process adapter
  gates every tool; the Claude core auto-allows only allowed tools).
- Its permission requests for allowed tools go to the Master's policy (the policy of
  the :class:`~rawp_adapters.host.Host` serving the parent) as a
  :class:`~rawp_adapters.host.DelegatedRequest` carrying the chain.
- Its output is relayed into the parent's stream as ``tool.invoke.stream`` frames
  with ``metadata.delegation_chain`` (``relay="stream"``), or only reported as the
  result (``relay="result"``); the result is its final text, ``output_type:
  agent_result``.
- It ends with the parent's call: an abort, the call's deadline, the parent
  session's end or the Master's loop being cancelled close its session (and stop its
  process).
- ``max_depth`` bounds the chain (1: sub-agents cannot delegate further);
  ``max_concurrent`` bounds the sub-agents running at once; a call over either limit
  is refused at once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from contextlib import suppress
from typing import Any, Final, Literal

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream
from pydantic import BaseModel, ConfigDict

from rawp_adapters._adapter import Adapter, AgentMetadata
from rawp_adapters._errors import SessionClosedError
from rawp_adapters._frames import (
    AgentErrorFrame,
    ClientFrame,
    DelegationLink,
    FrameMetadata,
    HostTool,
    ModelChangedFrame,
    SessionClosedFrame,
    SessionErrorFrame,
    TextDeltaFrame,
    TextDoneFrame,
    ToolInvokeStreamFrame,
    TurnEndFrame,
)
from rawp_adapters._registry import create_adapter
from rawp_adapters._session import Session, SessionOptions, open_session
from rawp_adapters.host._host import CatalogRefused, Host
from rawp_adapters.host._tools import HostTools, ToolCall, ToolError, ToolOutput

Relay = Literal["stream", "result"]

DEFAULT_DESCRIPTION: Final = (
    "Delegate a self-contained task to a sub-agent. It works in the same workspace, sees "
    "none of this conversation, and answers with its final text."
)
_FINISHED: Final = frozenset({"end_turn", "max_tokens"})


class TaskInput(BaseModel):
    """The ``Task`` tool's input (as Claude Code's and DPS 1.0.0 §10's)."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    description: str
    """A short label for the task (3-5 words)."""
    prompt: str
    """What the sub-agent is asked."""
    allowed_tools: list[str] | None = None
    """The sub-agent's tools; at most the parent's. The parent's when left out."""
    model: str | None = None
    """A model for the sub-agent (if its agent can change models)."""


class Delegation:
    """A host tool (``Task`` by default) that runs ``agent`` as a sub-agent for each
    call: an :class:`~rawp_adapters.AgentMetadata` (any installed adapter, found by
    ``adapter_type``) or a function making an adapter.

    ``allowed_tools`` is the parent agent's tool set (``None``: not limited);
    ``options`` the sub-agents' :class:`~rawp_adapters.SessionOptions`; ``on_frame``
    sees every frame of every sub-agent, its ``metadata.delegation_chain`` set.
    """

    def __init__(
        self,
        agent: AgentMetadata | Callable[[], Adapter],
        *,
        name: str = "Task",
        description: str = DEFAULT_DESCRIPTION,
        allowed_tools: Iterable[str] | None = None,
        relay: Relay = "stream",
        max_depth: int = 1,
        max_concurrent: int = 4,
        options: SessionOptions | None = None,
        on_frame: Callable[[ClientFrame], object] | None = None,
    ) -> None:
        if max_depth < 1 or max_concurrent < 1:
            raise ValueError("max_depth and max_concurrent must be at least 1")
        self.agent = agent
        self.allowed_tools = frozenset(allowed_tools) if allowed_tools is not None else None
        self.relay: Relay = relay
        self.max_depth = max_depth
        self.max_concurrent = max_concurrent
        self.options = options
        self.on_frame = on_frame
        self.running = 0
        """Sub-agents running now."""
        self.spec = HostTool(
            name=name, description=description, input_schema=TaskInput.model_json_schema()
        )

    async def run(self, call: ToolCall) -> ToolOutput:
        task = TaskInput.model_validate(call.input)
        chain = call.host.delegation_chain
        if len(chain) >= self.max_depth:
            raise ToolError(
                f"delegation is limited to {self.max_depth} level(s); this agent may not "
                "delegate further"
            )
        allowed = self._allowed_for(call, task.allowed_tools)
        if self.running >= self.max_concurrent:
            raise ToolError(
                f"{self.running} sub-agents are running, the limit; try again when one has finished"
            )
        link = DelegationLink(agent_id=call.session.session_id, invocation_id=call.invocation_id)
        self.running += 1
        try:
            return await self._delegate(call, task, (*chain, link), allowed)
        finally:
            self.running -= 1

    def _allowed_for(self, call: ToolCall, requested: list[str] | None) -> frozenset[str] | None:
        """The sub-agent's tools: what it asked for, never more than its parent may use."""
        parent = self.allowed_tools
        above = call.host.allowed_tools
        if above is not None:
            parent = above if parent is None else parent & above
        if requested is None:
            return parent
        if parent is not None:
            wider = sorted(set(requested) - parent)
            if wider:
                raise ToolError(
                    f"the sub-agent may not use {', '.join(wider)}: the parent may not "
                    f"(allowed: {', '.join(sorted(parent)) or 'none'})"
                )
        return frozenset(requested)

    async def _delegate(
        self,
        call: ToolCall,
        task: TaskInput,
        chain: tuple[DelegationLink, ...],
        allowed: frozenset[str] | None,
    ) -> ToolOutput:
        metadata = FrameMetadata(delegation_chain=list(chain))
        adapter = self._adapter(allowed)
        send, receive = anyio.create_memory_object_stream[ClientFrame](math.inf)

        def seen(frame: ClientFrame) -> None:
            if self.on_frame is not None:
                self.on_frame(frame if frame.metadata else _stamped(frame, metadata))
            send.send_nowait(frame)

        output: ToolOutput | None = None
        work = anyio.CancelScope()
        async with anyio.create_task_group() as watching:
            watching.start_soon(_cancel_when_cancelled, work)
            # The sub-agent's session runs shielded, so that when the parent's call is
            # cancelled its frames still reach on_frame to the end of its close; the
            # work on it is cancelled with the call.
            with anyio.CancelScope(shield=True):
                async with (
                    send,
                    receive,
                    open_session(
                        adapter, workspace=call.session.workspace, options=self.options
                    ) as child,
                    anyio.create_task_group() as tg,
                ):
                    tools = self._child_tools(call.host.tools, child, allowed, len(chain))
                    host = Host(
                        child,
                        tools,
                        call.host.policy,
                        on_frame=seen,
                        delegation_chain=chain,
                        allowed_tools=allowed,
                    )
                    relay = _Relay(call, child, receive, metadata, stream=self.relay == "stream")
                    with work:
                        try:
                            await tg.start(host.run)
                            output = await relay.run(task)
                        except (ToolError, CatalogRefused) as exc:
                            output = ToolOutput(
                                str(exc), "agent_result", is_error=True, metadata=metadata
                            )
                    await child.close()
            watching.cancel_scope.cancel()
        await anyio.lowlevel.checkpoint_if_cancelled()
        assert output is not None, "the work ends with an output unless the call is cancelled"
        return output

    def _adapter(self, allowed: frozenset[str] | None) -> Adapter:
        if not isinstance(self.agent, AgentMetadata):
            return self.agent()
        metadata = self.agent if allowed is None else _restricted(self.agent, allowed)
        return create_adapter(metadata)

    def _child_tools(
        self, tools: HostTools, child: Session, allowed: frozenset[str] | None, depth: int
    ) -> HostTools:
        """The parent's host tools the sub-agent may call (not this one at the depth
        limit), if its agent takes host tools at all."""
        if child.closed or not child.features.host_tools:
            return HostTools()
        names = {tool.spec.name for tool in tools} if allowed is None else set(allowed)
        if depth >= self.max_depth:
            names.discard(self.spec.name)
        return tools.only(names)


class _Relay:
    """Runs the sub-agent's prompt and passes its output on to the parent's call."""

    def __init__(
        self,
        call: ToolCall,
        child: Session,
        frames: MemoryObjectReceiveStream[ClientFrame],
        metadata: FrameMetadata,
        *,
        stream: bool,
    ) -> None:
        self._call = call
        self._child = child
        self._frames = frames
        self._metadata = metadata
        self._stream = stream

    async def run(self, task: TaskInput) -> ToolOutput:
        child = self._child
        if task.model is not None:
            await self._set_model(task.model)
        with suppress(SessionClosedError):  # its start failed: its frames say why
            await child.send(child.control.prompt(task.prompt))
        final_text = ""
        problem = ""
        async for frame in self._frames:
            if isinstance(frame, TextDeltaFrame) and self._stream:
                await self._call.stream(frame.payload.text, metadata=self._metadata)
            elif isinstance(frame, ToolInvokeStreamFrame) and self._stream and frame.metadata:
                await self._call.stream(frame.payload.output, metadata=frame.metadata)
            elif isinstance(frame, TextDoneFrame):
                final_text = frame.payload.text
            elif isinstance(frame, AgentErrorFrame):
                problem = f": {frame.payload.message}"
            elif isinstance(frame, TurnEndFrame):
                stop = frame.payload.stop_reason
                if stop in _FINISHED:
                    return ToolOutput(final_text, "agent_result", metadata=self._metadata)
                return ToolOutput(
                    f"the sub-agent's turn ended ({stop}){problem}",
                    "agent_result",
                    is_error=True,
                    metadata=self._metadata,
                )
            elif isinstance(frame, SessionClosedFrame):
                break
        raise ToolError(f"the sub-agent's session ended before it answered{problem}")

    async def _set_model(self, model: str) -> None:
        child = self._child
        if not child.features.model_change:
            raise ToolError(f"the sub-agent cannot change its model (to {model!r})")
        with suppress(SessionClosedError):
            await child.send(child.control.set_model(model))
        async for frame in self._frames:
            if isinstance(frame, ModelChangedFrame):
                return
            if isinstance(frame, SessionErrorFrame):
                message = frame.payload.message
                raise ToolError(f"the sub-agent cannot use model {model!r}: {message}")
            if isinstance(frame, SessionClosedFrame):
                break
        raise ToolError("the sub-agent's session ended before it changed its model")


async def _cancel_when_cancelled(scope: anyio.CancelScope) -> None:
    try:
        await anyio.sleep_forever()
    finally:
        scope.cancel()


def _stamped(frame: ClientFrame, metadata: FrameMetadata) -> ClientFrame:
    stamped: ClientFrame = frame.model_copy(update={"metadata": metadata})
    return stamped


def _restricted(metadata: AgentMetadata, allowed: frozenset[str]) -> AgentMetadata:
    """``metadata`` with the adapter settings that narrow the agent's tools, where the
    adapter has them; the permission gate denies the rest either way."""
    settings: dict[str, Any] = dict(metadata.settings)
    if metadata.adapter_type == "process" and "protocol" not in settings:
        if settings.get("approval") == "none":
            raise ToolError(
                "the sub-agent's tools cannot be limited: its settings turn approval off"
            )
        settings["permission_tools"] = ["*"]  # every tool asks; the gate decides
    elif metadata.adapter_type == "sdk" and settings.get("core") == "claude":
        options = dict(settings.get("core_options") or {})
        options["allowed_tools"] = [t for t in options.get("allowed_tools", ()) if t in allowed]
        settings["core_options"] = options
    return metadata.model_copy(update={"settings": settings})
