"""The OpenAI Agents SDK's stream events of one turn → :mod:`rawp_adapter_sdk.events`.

Raw model events give the text (``response.output_text.delta``) and the reasoning
(``response.reasoning_summary_text.delta``, ``response.reasoning_text.delta``), in
blocks numbered per turn; a block ends when its output item is done or another kind
of output starts. ``response.completed`` gives the usage of that model call. Run items
give the tool calls (``tool_called``) and their results (``tool_output``); calls of the
Master's tools are left out (the host call reports them).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from rawp_adapter_sdk.events import (
    CoreEvent,
    TextChunk,
    TextEnd,
    ThinkingChunk,
    ThinkingEnd,
    ToolFinished,
    ToolStarted,
    UsageReport,
)

_TEXT_DELTA = "response.output_text.delta"
_THINKING_DELTAS = frozenset(
    {"response.reasoning_summary_text.delta", "response.reasoning_text.delta"}
)
_ITEM_DONE = "response.output_item.done"
_COMPLETED = "response.completed"


@dataclass
class _Block:
    kind: Literal["text", "thinking"]
    index: int
    parts: list[str] = field(default_factory=list)

    def end(self) -> CoreEvent:
        text = "".join(self.parts)
        return TextEnd(self.index, text) if self.kind == "text" else ThinkingEnd(self.index, text)


@dataclass
class TurnTranslator:
    """Stateful over one prompt (its resumptions after approvals included)."""

    host_tools: Collection[str] = ()
    failed_calls: set[str] = field(default_factory=set)
    """Call ids whose output is an error (a rejection, a tool that failed)."""
    _block: _Block | None = None
    _next_index: int = 0
    _host_calls: set[str] = field(default_factory=set)

    def translate(self, event: Any) -> list[CoreEvent]:
        kind = getattr(event, "type", None)
        if kind == "raw_response_event":
            return self._raw(event.data)
        if kind == "run_item_stream_event":
            return self._item(event.name, event.item)
        return []

    def close_block(self) -> list[CoreEvent]:
        block, self._block = self._block, None
        return [block.end()] if block is not None else []

    def _raw(self, data: Any) -> list[CoreEvent]:
        kind = getattr(data, "type", None)
        if kind == _TEXT_DELTA:
            return self._delta("text", data.delta)
        if kind in _THINKING_DELTAS:
            return self._delta("thinking", data.delta)
        if kind == _ITEM_DONE:
            return self.close_block()
        if kind == _COMPLETED:
            return [*self.close_block(), *_usage(getattr(data.response, "usage", None))]
        return []

    def _delta(self, kind: Literal["text", "thinking"], delta: str) -> list[CoreEvent]:
        events: list[CoreEvent] = []
        if self._block is None or self._block.kind != kind:
            events += self.close_block()
            self._block = _Block(kind, self._next_index)
            self._next_index += 1
        self._block.parts.append(delta)
        index = self._block.index
        events.append(TextChunk(index, delta) if kind == "text" else ThinkingChunk(index, delta))
        return events

    def _item(self, name: str, item: Any) -> list[CoreEvent]:
        if name == "tool_called":
            raw = item.raw_item
            call_id, tool_name = field_of(raw, "call_id"), field_of(raw, "name")
            if not isinstance(call_id, str) or not isinstance(tool_name, str):
                return []
            if tool_name in self.host_tools:
                self._host_calls.add(call_id)
                return []
            return [
                *self.close_block(),
                ToolStarted(call_id, tool_name, parse_arguments(field_of(raw, "arguments"))),
            ]
        if name == "tool_output":
            call_id = field_of(item.raw_item, "call_id")
            if not isinstance(call_id, str) or call_id in self._host_calls:
                return []
            output = "" if item.output is None else str(item.output)
            return [
                ToolFinished(
                    call_id,
                    output=output,
                    is_error=call_id in self.failed_calls,
                    output_type="text" if output else "empty",
                )
            ]
        return []


def field_of(raw: Any, name: str) -> Any:
    return raw.get(name) if isinstance(raw, Mapping) else getattr(raw, name, None)


def parse_arguments(arguments: Any) -> dict[str, Any]:
    if not isinstance(arguments, str) or not arguments:
        return {}
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return {"arguments": arguments}
    return parsed if isinstance(parsed, dict) else {"arguments": parsed}


def _usage(usage: Any) -> list[CoreEvent]:
    if usage is None:
        return []
    details = getattr(usage, "input_tokens_details", None)
    return [
        UsageReport(
            input_tokens=getattr(usage, "input_tokens", None),
            output_tokens=getattr(usage, "output_tokens", None),
            cache_read_tokens=getattr(details, "cached_tokens", None),
        )
    ]
