"""Core events → DPS payloads for one turn (sans-IO: no awaits, no clock), one to one.

The session runtime keeps the stream whole for every adapter: it closes the blocks
and tool calls a turn leaves open, sums the usage steps into one ``session.usage``,
and drops events that contradict the stream (a second start of a call, output of a
call that is not running).
"""

from __future__ import annotations

from rawp_adapter_sdk.events import (
    CoreEvent,
    PlanChanged,
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
    PlanUpdated,
    SessionUsage,
    StopReason,
    TextDelta,
    TextDone,
    ThinkingDelta,
    ThinkingDone,
    ToolInvokeRequest,
    ToolInvokeResult,
    ToolInvokeStream,
)

_USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


class TurnTranslator:
    """Translates the events of one turn, one to one; read :attr:`stop_reason` at the
    end. What a turn leaves open (blocks, tool calls) and its usage sum are the session
    runtime's, as for every adapter."""

    __slots__ = ("stop_reason", "turn_id")

    def __init__(self, turn_id: str) -> None:
        self.turn_id = turn_id
        self.stop_reason: StopReason = "end_turn"

    def translate(self, event: CoreEvent) -> ClientPayload | None:
        turn_id = self.turn_id
        match event:
            case TextChunk(index=index, text=text):
                return TextDelta(turn_id=turn_id, index=index, text=text)
            case ThinkingChunk(index=index, text=text, redacted=redacted):
                return ThinkingDelta(turn_id=turn_id, index=index, text=text, redacted=redacted)
            case TextEnd(index=index, text=text):
                return TextDone(turn_id=turn_id, index=index, text=text)
            case ThinkingEnd(index=index, text=text, redacted=redacted):
                return ThinkingDone(turn_id=turn_id, index=index, text=text, redacted=redacted)
            case ToolStarted(call_id=call_id, tool_name=tool_name, input=tool_input):
                return ToolInvokeRequest(
                    invocation_id=call_id,
                    tool_name=tool_name,
                    input=dict(tool_input),
                    turn_id=turn_id,
                )
            case ToolProgress(call_id=call_id, output=output):
                return ToolInvokeStream(invocation_id=call_id, output=output, turn_id=turn_id)
            case ToolFinished(call_id=call_id):
                return ToolInvokeResult(
                    invocation_id=call_id,
                    output_type=event.output_type,
                    output=event.output,
                    is_error=event.is_error,
                    turn_id=turn_id,
                )
            case UsageReport():
                step = {
                    name: value
                    for name in (*_USAGE_FIELDS, "cost_usd")
                    if (value := getattr(event, name)) is not None
                }
                return SessionUsage.model_validate({"turn_id": turn_id, **step})
            case PlanChanged(entries=entries):
                return PlanUpdated(entries=list(entries), turn_id=turn_id)
            case Stopped(reason=reason):
                self.stop_reason = reason
        return None
