"""An adapter whose turns are run by a function: an agent to test against offline.

As pydantic-ai's ``FunctionModel`` answers with a user function, :class:`FunctionAdapter`
runs each prompt with ``function(turn, ctx)``, which emits payloads through ``ctx`` as an
agent would and returns how the turn ended. It records what the session asked of it
(prompts, aborts, compactions, mode switches, close) for a test to check.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, ClassVar, Literal

import anyio

from rawp_adapters._adapter import (
    Adapter,
    AdapterSettings,
    CloseResult,
    HostToolCall,
    ModelState,
    Question,
    SessionContext,
    Turn,
    TurnResult,
)
from rawp_adapters._errors import OperationRejected
from rawp_adapters._frames import (
    AgentInfo,
    Features,
    HostTool,
    Mode,
    ModelSet,
    PromptSteer,
    TextDelta,
    TextDone,
    ToolInvokeRequest,
    ToolInvokeResult,
)

TurnFunction = Callable[[Turn, SessionContext], Awaitable[TurnResult]]
"""Runs one turn: emits payloads through the context and returns how the turn ended."""

CompactFunction = Callable[[str | None, SessionContext], Awaitable[None]]
"""Compacts (given the Master's instructions); may emit ``SessionCompacted``."""

SwitchModeFunction = Callable[[Mode, SessionContext], Awaitable[None]]

ToolFunction = Callable[[Mapping[str, Any], SessionContext], Awaitable[str]]
"""Runs an allowed tool call with its input; returns the tool's output."""

AbortMode = Literal["notify", "cancel"]


def say(*parts: str, index: int = 0) -> TurnFunction:
    """A turn that streams each of ``parts`` as one text delta of block ``index``, then
    the whole text as done, and ends with ``end_turn``."""
    text = "".join(parts)

    async def function(turn: Turn, ctx: SessionContext) -> TurnResult:
        for part in parts:
            await ctx.emit(TextDelta(turn_id=turn.turn_id, index=index, text=part))
        await ctx.emit(TextDone(turn_id=turn.turn_id, index=index, text=text))
        return TurnResult()

    return function


def ask_permission(
    tool_name: str,
    tool_input: Mapping[str, Any] | None = None,
    *,
    call_id: str = "call-1",
    timeout_ms: int | None = None,
    run: ToolFunction | None = None,
) -> TurnFunction:
    """A turn that calls ``tool_name`` once, asking PERMISSION first.

    Allowed, the call runs ``run`` (if given) and its result is what ``run`` returned, or
    ``ran <tool_name>``; otherwise the result is an error, ``not allowed (<reason>)``.
    The turn ends with ``end_turn`` either way.
    """
    given_input = dict(tool_input or {})

    async def function(turn: Turn, ctx: SessionContext) -> TurnResult:
        await ctx.emit(
            ToolInvokeRequest(
                invocation_id=call_id, tool_name=tool_name, input=given_input, turn_id=turn.turn_id
            )
        )
        outcome = await ctx.interact(
            Question.permission(
                tool_name,
                tool_input=given_input,
                tool_call_id=call_id,
                turn_id=turn.turn_id,
                timeout_ms=timeout_ms,
            )
        )
        if not outcome.allowed:
            output = f"not allowed ({outcome.reason})"
        elif run is not None:
            output = await run(given_input, ctx)
        else:
            output = f"ran {tool_name}"
        await ctx.emit(
            ToolInvokeResult(
                invocation_id=call_id,
                output_type="text",
                output=output,
                is_error=not outcome.allowed,
                turn_id=turn.turn_id,
            )
        )
        return TurnResult()

    return function


def use_host_tool(tool_name: str, tool_input: Mapping[str, Any]) -> TurnFunction:
    """A turn that calls the Master's tool ``tool_name`` once (call id ``host-1``),
    streams each piece of its progress as text, then the outcome's text, and ends."""

    async def function(turn: Turn, ctx: SessionContext) -> TurnResult:
        async def progress(output: str) -> None:
            await ctx.emit(TextDelta(turn_id=turn.turn_id, index=0, text=output))

        call = HostToolCall("host-1", tool_name, tool_input, turn_id=turn.turn_id)
        outcome = await ctx.call_host_tool(call, progress)
        await ctx.emit(TextDelta(turn_id=turn.turn_id, index=1, text=outcome.text))
        return TurnResult()

    return function


def stall(text: str | None = None) -> TurnFunction:
    """A turn that streams ``text`` (if any) as one delta, then makes no progress: it
    ends when it is cancelled (``abort="cancel"``, or the session's abort grace)."""

    async def function(turn: Turn, ctx: SessionContext) -> TurnResult:
        if text is not None:
            await ctx.emit(TextDelta(turn_id=turn.turn_id, index=0, text=text))
        await anyio.sleep_forever()
        raise AssertionError("unreachable: sleep_forever returned")

    return function


class FunctionAdapter(Adapter):
    """An adapter whose every prompt is run by ``function(turn, ctx)`` (by default
    :func:`say` ``("Hel", "lo")``: "Hello" in two deltas).

    - ``features``: what ``session.capabilities`` states; by default ``abort``, and
      ``context_compaction`` / ``plan_mode`` when ``compact`` / ``switch_mode`` are given.
    - ``start_error``: raised by :meth:`start` (e.g. ``StartFailed.of("no binary")``).
    - ``abort``: every abort is recorded in :attr:`aborted` and sets :attr:`abort_event`;
      with ``"notify"`` (the default) the function decides when its turn ends, with
      ``"cancel"`` the running function is also cancelled and the turn ends ``cancelled``.
    - ``compact`` / ``switch_mode``: run for ``control.session.compact`` /
      ``control.mode.switch``; without them the adapter cannot do either.
    - ``agent_info``: the agent named in ``session.capabilities``.
    - ``host_tools`` / ``steering``: take ``tool.catalog.publish`` (kept in
      :attr:`tools`) / ``control.prompt.steer`` both ways (kept in :attr:`steered`).
    - ``models``: model ids ``control.model.set`` accepts (others are rejected).

    After the session: :attr:`ctx`, :attr:`prompts`, :attr:`aborted`,
    :attr:`compactions`, :attr:`modes` and :attr:`closed` say what it was asked.
    """

    adapter_type: ClassVar[str] = "function"

    def __init__(
        self,
        function: TurnFunction | None = None,
        *,
        features: Features | None = None,
        start_error: Exception | None = None,
        abort: AbortMode = "notify",
        compact: CompactFunction | None = None,
        switch_mode: SwitchModeFunction | None = None,
        agent_info: AgentInfo | None = None,
        host_tools: bool = False,
        steering: bool = False,
        models: Sequence[str] | None = None,
    ) -> None:
        super().__init__(AdapterSettings())
        self.function: TurnFunction = function or say("Hel", "lo")
        self._features = features or Features(
            adapter_type=self.adapter_type,
            abort=True,
            context_compaction=compact is not None,
            plan_mode=switch_mode is not None,
            host_tools=host_tools,
            steering=steering,
            follow_up=steering,
            model_change=models is not None,
        )
        self._start_error = start_error
        self._abort_mode: AbortMode = abort
        self._compact = compact
        self._switch_mode = switch_mode
        self._agent_info = agent_info
        self._running: tuple[str, anyio.CancelScope] | None = None
        self.ctx: SessionContext | None = None
        """The session's context, once started."""
        self.prompts: list[Turn] = []
        self.aborted: list[str] = []
        """The turn id of every abort, in order."""
        self.abort_event = anyio.Event()
        """Set by an abort; a new one for each turn that starts after it was set."""
        self.compactions: list[str | None] = []
        self.modes: list[Mode] = []
        self.tools: list[HostTool] = []
        self.steered: list[PromptSteer] = []
        self.models = list(models or ())
        self.closed = False

    @property
    def features(self) -> Features:
        return self._features

    @property
    def agent_info(self) -> AgentInfo | None:
        return self._agent_info

    async def start(self, ctx: SessionContext) -> None:
        self.ctx = ctx
        if self._start_error is not None:
            raise self._start_error

    async def prompt(self, turn: Turn) -> TurnResult:
        assert self.ctx is not None, "prompt() before start()"
        self.prompts.append(turn)
        aborted_already = turn.turn_id in self.aborted  # before this call even began
        if self.abort_event.is_set() and not aborted_already:
            self.abort_event = anyio.Event()
        with anyio.CancelScope() as scope:
            self._running = (turn.turn_id, scope)
            if aborted_already and self._abort_mode == "cancel":
                scope.cancel()
            return await self.function(turn, self.ctx)
        return TurnResult(stop_reason="cancelled")  # the scope was cancelled by abort()

    async def abort(self, turn: Turn) -> None:
        self.aborted.append(turn.turn_id)
        self.abort_event.set()
        if self._abort_mode == "cancel" and self._running is not None:
            running_turn_id, scope = self._running
            if running_turn_id == turn.turn_id:
                scope.cancel()

    async def compact(self, custom_instructions: str | None) -> None:
        if self._compact is None:
            await super().compact(custom_instructions)  # raises UnsupportedOperation
            return
        assert self.ctx is not None, "compact() before start()"
        self.compactions.append(custom_instructions)
        await self._compact(custom_instructions, self.ctx)

    async def switch_mode(self, mode: Mode) -> None:
        if self._switch_mode is None:
            await super().switch_mode(mode)  # raises UnsupportedOperation
            return
        assert self.ctx is not None, "switch_mode() before start()"
        self.modes.append(mode)
        await self._switch_mode(mode, self.ctx)

    async def publish_tools(self, tools: Sequence[HostTool]) -> None:
        if not self._features.host_tools:
            await super().publish_tools(tools)  # raises UnsupportedOperation
        self.tools = list(tools)

    async def steer(self, turn: Turn, message: PromptSteer) -> None:
        if not self._features.steering:
            await super().steer(turn, message)  # raises UnsupportedOperation
        self.steered.append(message)

    async def set_model(self, change: ModelSet) -> ModelState:
        if change.model is not None and change.model not in self.models:
            raise OperationRejected(f"no model {change.model!r}")
        return ModelState(model=change.model)

    async def close(self) -> CloseResult:
        self.closed = True
        return CloseResult(exit_code=0)
