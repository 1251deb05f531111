"""pydantic-ai's stream events as the SDK adapter's core events.

Text and thinking parts become blocks numbered per turn (pydantic-ai numbers the parts
of each model response from 0); a function tool call becomes ``ToolStarted`` (once, also
when a deferred call is resumed) and its result ``ToolFinished``. Calls of the Master's
tools are left out: the session reports those itself.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.messages import (
    AgentStreamEvent,
    FunctionToolCallEvent,
    FunctionToolResultEvent,
    PartDeltaEvent,
    PartEndEvent,
    PartStartEvent,
    RetryPromptPart,
    TextPart,
    TextPartDelta,
    ThinkingPart,
    ThinkingPartDelta,
    ToolCallPart,
)
from rawp_adapter_sdk.events import (
    CoreEvent,
    TextChunk,
    TextEnd,
    ThinkingChunk,
    ThinkingEnd,
    ToolFinished,
    ToolStarted,
)

_FAILED_OUTCOMES = frozenset({"failed", "denied", "interrupted", "retried"})


def tool_input(part: ToolCallPart) -> dict[str, Any]:
    """The arguments of a call as a mapping (``{"raw": …}`` when they are not JSON)."""
    try:
        return part.args_as_dict()
    except ValueError:
        return {"raw": part.args}


@dataclass
class TurnTranslator:
    """The state of one turn's translation (it spans the runs a turn's approvals need)."""

    host_tools: Collection[str] = ()
    _blocks: dict[int, int] = field(default_factory=dict)
    """pydantic-ai's part index in the current response → the turn's block index."""
    _next_block: int = 0
    _started: set[str] = field(default_factory=set)
    open_calls: dict[str, str] = field(default_factory=dict)
    """Started calls without a result yet: call id → tool name."""

    def translate(self, event: AgentStreamEvent) -> list[CoreEvent]:
        if isinstance(event, PartStartEvent):
            return self._start(event.index, event.part)
        if isinstance(event, PartDeltaEvent):
            block = self._blocks.get(event.index)
            delta = event.delta
            if block is None or not delta.content_delta:  # type: ignore[union-attr]
                return []
            if isinstance(delta, TextPartDelta):
                return [TextChunk(block, delta.content_delta)]
            if isinstance(delta, ThinkingPartDelta) and delta.content_delta:
                return [ThinkingChunk(block, delta.content_delta)]
            return []
        if isinstance(event, PartEndEvent):
            block = self._blocks.get(event.index)
            if block is None:
                return []
            if isinstance(event.part, TextPart):
                return [TextEnd(block, event.part.content)]
            if isinstance(event.part, ThinkingPart):
                return [ThinkingEnd(block, event.part.content)]
            return []
        if isinstance(event, FunctionToolCallEvent):
            return self._call(event.part)
        if isinstance(event, FunctionToolResultEvent):
            return self._result(event)
        return []

    def _start(self, index: int, part: object) -> list[CoreEvent]:
        if index in self._blocks:  # a new model response numbers its parts from 0 again
            self._blocks.clear()
        if not isinstance(part, TextPart | ThinkingPart):
            return []
        block = self._next_block
        self._next_block += 1
        self._blocks[index] = block
        if not part.content:
            return []
        if isinstance(part, TextPart):
            return [TextChunk(block, part.content)]
        return [ThinkingChunk(block, part.content)]

    def _call(self, part: ToolCallPart) -> list[CoreEvent]:
        if part.tool_name in self.host_tools or part.tool_call_id in self._started:
            return []
        self._started.add(part.tool_call_id)
        self.open_calls[part.tool_call_id] = part.tool_name
        return [ToolStarted(part.tool_call_id, part.tool_name, tool_input(part))]

    def _result(self, event: FunctionToolResultEvent) -> list[CoreEvent]:
        result = event.part
        if self.open_calls.pop(result.tool_call_id, None) is None:
            return []
        if isinstance(result, RetryPromptPart):
            return [ToolFinished(result.tool_call_id, result.model_response(), is_error=True)]
        failed = result.outcome in _FAILED_OUTCOMES
        output = result.model_response_str(wrap_if_error=False)
        return [ToolFinished(result.tool_call_id, output, is_error=failed)]

    def finish_open(self, message: str) -> list[CoreEvent]:
        """A result for every started call that has none (the turn stops before them)."""
        finished: list[CoreEvent] = [
            ToolFinished(call_id, message, is_error=True) for call_id in self.open_calls
        ]
        self.open_calls.clear()
        return finished
