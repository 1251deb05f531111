"""Core events → DPS payloads for one turn (sans-IO: no awaits, no clock).

Besides the one-to-one mapping it keeps the turn's stream whole: a text or thinking
block that got deltas but no done is completed at the end, a tool call still running
when the turn ends gets an error result, usage steps are summed for the turn end,
and events that contradict the stream so far (a second start of a call, output for
a call that is not running) are dropped and counted.
"""

from __future__ import annotations

from rawp_adapter_sdk.events import (
    CoreEvent,
    Stopped,
    TextChunk,
    TextEnd,
    ThinkingChunk,
    ThinkingEnd,
    ToolFinished,
    ToolProgress,
    ToolStarted,
    UsageReport,
)
from rawp_adapters.frames import (
    ClientPayload,
    SessionUsage,
    StopReason,
    TextDelta,
    TextDone,
    ThinkingDelta,
    ThinkingDone,
    TokenUsage,
    ToolInvokeRequest,
    ToolInvokeResult,
    ToolInvokeStream,
)

_USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


class _OpenBlock:
    __slots__ = ("parts", "redacted", "thinking")

    def __init__(self, *, thinking: bool, redacted: bool) -> None:
        self.thinking = thinking
        self.redacted = redacted
        self.parts: list[str] = []


class TurnTranslator:
    """Translates the events of one turn; read :attr:`stop_reason` and :attr:`usage`
    after :meth:`finish`."""

    def __init__(self, turn_id: str) -> None:
        self.turn_id = turn_id
        self.stop_reason: StopReason = "end_turn"
        self.dropped = 0
        """Events dropped because they contradict the stream so far."""
        self._blocks: dict[int, _OpenBlock] = {}
        self._tools_running: set[str] = set()
        self._tools_done: set[str] = set()
        self._usage: dict[str, int | float] = {}

    @property
    def usage(self) -> TokenUsage | None:
        """The turn's usage so far (the sum of its steps), or None if none was reported."""
        return TokenUsage.model_validate(self._usage) if self._usage else None

    def translate(self, event: CoreEvent) -> list[ClientPayload]:
        turn_id = self.turn_id
        match event:
            case TextChunk(index=index, text=text):
                self._open(index, thinking=False, redacted=False).parts.append(text)
                return [TextDelta(turn_id=turn_id, index=index, text=text)]
            case ThinkingChunk(index=index, text=text, redacted=redacted):
                self._open(index, thinking=True, redacted=redacted).parts.append(text)
                return [ThinkingDelta(turn_id=turn_id, index=index, text=text, redacted=redacted)]
            case TextEnd(index=index, text=text):
                self._blocks.pop(index, None)
                return [TextDone(turn_id=turn_id, index=index, text=text)]
            case ThinkingEnd(index=index, text=text, redacted=redacted):
                self._blocks.pop(index, None)
                return [ThinkingDone(turn_id=turn_id, index=index, text=text, redacted=redacted)]
            case ToolStarted(call_id=call_id, tool_name=tool_name, input=tool_input):
                if call_id in self._tools_running or call_id in self._tools_done:
                    return self._drop()
                self._tools_running.add(call_id)
                return [
                    ToolInvokeRequest(
                        invocation_id=call_id,
                        tool_name=tool_name,
                        input=dict(tool_input),
                        turn_id=turn_id,
                    )
                ]
            case ToolProgress(call_id=call_id, output=output):
                if call_id not in self._tools_running:
                    return self._drop()
                return [ToolInvokeStream(invocation_id=call_id, output=output, turn_id=turn_id)]
            case ToolFinished(call_id=call_id):
                if call_id not in self._tools_running:
                    return self._drop()
                self._tools_running.discard(call_id)
                self._tools_done.add(call_id)
                return [
                    ToolInvokeResult(
                        invocation_id=call_id,
                        output_type=event.output_type,
                        output=event.output,
                        is_error=event.is_error,
                        turn_id=turn_id,
                    )
                ]
            case UsageReport():
                step = {
                    name: value
                    for name in (*_USAGE_FIELDS, "cost_usd")
                    if (value := getattr(event, name)) is not None
                }
                for name, value in step.items():
                    self._usage[name] = self._usage.get(name, 0) + value
                return [SessionUsage.model_validate({"turn_id": turn_id, **step})]
            case Stopped(reason=reason):
                self.stop_reason = reason
                return []
        return self._drop()

    def finish(self) -> list[ClientPayload]:
        """Payloads that complete the turn: done for open blocks. (Tool calls still running
        get their error result from the session runtime, as for every adapter.)"""
        payloads: list[ClientPayload] = []
        for index, block in sorted(self._blocks.items()):
            text = "".join(block.parts)
            if block.thinking:
                payloads.append(
                    ThinkingDone(
                        turn_id=self.turn_id, index=index, text=text, redacted=block.redacted
                    )
                )
            else:
                payloads.append(TextDone(turn_id=self.turn_id, index=index, text=text))
        self._blocks.clear()
        self._tools_done |= self._tools_running
        self._tools_running.clear()
        return payloads

    def _open(self, index: int, *, thinking: bool, redacted: bool) -> _OpenBlock:
        block = self._blocks.get(index)
        if block is None:
            block = self._blocks[index] = _OpenBlock(thinking=thinking, redacted=redacted)
        return block

    def _drop(self) -> list[ClientPayload]:
        self.dropped += 1
        return []
