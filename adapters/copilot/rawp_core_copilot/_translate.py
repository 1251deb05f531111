"""The Copilot session's events as the core's events (one translator per turn)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

from copilot.session_events import (
    AssistantMessageData,
    AssistantMessageDeltaData,
    AssistantReasoningData,
    AssistantReasoningDeltaData,
    AssistantUsageData,
    SessionErrorData,
    SessionEvent,
    SessionIdleData,
    ToolExecutionCompleteData,
    ToolExecutionStartData,
)
from rawp_adapter_sdk import CoreError
from rawp_adapter_sdk.events import (
    CoreEvent,
    Stopped,
    TextChunk,
    TextEnd,
    ThinkingChunk,
    ThinkingEnd,
    ToolFinished,
    ToolStarted,
    UsageReport,
)


def tool_input(arguments: Any) -> Mapping[str, Any]:
    return arguments if isinstance(arguments, dict) else {"input": arguments}


class TurnTranslator:
    """Numbers the turn's text and thinking blocks (from 0) by the SDK's message and
    reasoning ids. A ``session.error`` is kept until the session is idle (the CLI tells
    both), then raised as :class:`CoreError`: nothing of the failed turn is left to
    reach the next one."""

    def __init__(self, host_tools: Collection[str] = ()) -> None:
        self._blocks: dict[tuple[str, str], int] = {}
        self._streamed: set[int] = set()
        self._error: str | None = None
        self._host_tools = host_tools
        self._host_calls: set[str] = set()
        """Calls of the Master's tools: the session reports those itself."""

    def _block(self, kind: str, key: str) -> int:
        return self._blocks.setdefault((kind, key), len(self._blocks))

    def _chunk(self, index: int, text: str, *, thinking: bool) -> CoreEvent:
        self._streamed.add(index)
        return ThinkingChunk(index, text) if thinking else TextChunk(index, text)

    def _end(self, index: int, text: str, *, thinking: bool) -> list[CoreEvent]:
        events = [] if index in self._streamed else [self._chunk(index, text, thinking=thinking)]
        events.append(ThinkingEnd(index, text) if thinking else TextEnd(index, text))
        return events

    def translate(self, event: SessionEvent, *, cancelled: bool) -> list[CoreEvent]:
        by_kind = _BY_KIND.get(type(event.data))
        return [] if by_kind is None else by_kind(self, event.data, cancelled)

    def _text_delta(self, data: AssistantMessageDeltaData, _: bool) -> list[CoreEvent]:
        return self._delta("text", data.message_id, data.delta_content)

    def _text(self, data: AssistantMessageData, _: bool) -> list[CoreEvent]:
        return self._whole("text", data.message_id, data.content)

    def _thinking_delta(self, data: AssistantReasoningDeltaData, _: bool) -> list[CoreEvent]:
        return self._delta("thinking", data.reasoning_id, data.delta_content)

    def _thinking(self, data: AssistantReasoningData, _: bool) -> list[CoreEvent]:
        return self._whole("thinking", data.reasoning_id, data.content)

    def _delta(self, kind: str, key: str, text: str | None) -> list[CoreEvent]:
        if not text:
            return []
        return [self._chunk(self._block(kind, key), text, thinking=kind == "thinking")]

    def _whole(self, kind: str, key: str, text: str | None) -> list[CoreEvent]:
        if not text:
            return []
        return self._end(self._block(kind, key), text, thinking=kind == "thinking")

    def _tool_started(self, data: ToolExecutionStartData, _: bool) -> list[CoreEvent]:
        if data.tool_name in self._host_tools:
            self._host_calls.add(data.tool_call_id)
            return []
        return [ToolStarted(data.tool_call_id, data.tool_name, tool_input(data.arguments))]

    def _tool_finished(self, data: ToolExecutionCompleteData, _: bool) -> list[CoreEvent]:
        return [] if data.tool_call_id in self._host_calls else [_finished(data)]

    def _used(self, data: AssistantUsageData, _: bool) -> list[CoreEvent]:
        return [_usage(data)]

    def _failed(self, data: SessionErrorData, _: bool) -> list[CoreEvent]:
        self._error = f"{data.error_type}: {data.message}"
        return []

    def _idle(self, data: SessionIdleData, cancelled: bool) -> list[CoreEvent]:
        if self._error is not None and not (cancelled or data.aborted):
            raise CoreError(self._error)
        return [Stopped("cancelled" if cancelled or data.aborted else "end_turn")]


_BY_KIND: dict[type, Callable[[TurnTranslator, Any, bool], list[CoreEvent]]] = {
    AssistantMessageDeltaData: TurnTranslator._text_delta,
    AssistantMessageData: TurnTranslator._text,
    AssistantReasoningDeltaData: TurnTranslator._thinking_delta,
    AssistantReasoningData: TurnTranslator._thinking,
    ToolExecutionStartData: TurnTranslator._tool_started,
    ToolExecutionCompleteData: TurnTranslator._tool_finished,
    AssistantUsageData: TurnTranslator._used,
    SessionErrorData: TurnTranslator._failed,
    SessionIdleData: TurnTranslator._idle,
}

TRANSLATED = tuple(_BY_KIND)
"""The kinds of event data :meth:`TurnTranslator.translate` uses. The CLI sends about
four times as many events as a turn has frames (raw events, streaming deltas of its
own, model calls, hooks): only these cross to the session's thread."""


def _finished(data: ToolExecutionCompleteData) -> ToolFinished:
    if data.success:
        output = data.result.content if data.result is not None else ""
        return ToolFinished(data.tool_call_id, output)
    message = data.error.message if data.error is not None else "the tool failed"
    return ToolFinished(data.tool_call_id, message, is_error=True)


def _usage(data: AssistantUsageData) -> UsageReport:
    return UsageReport(
        input_tokens=data.input_tokens,
        output_tokens=data.output_tokens,
        cache_read_tokens=data.cache_read_tokens,
        cache_write_tokens=data.cache_write_tokens,
    )
