"""What the protocol state keeps about the running turn: its open text and thinking
blocks, its tool calls, its usage."""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Final

import msgspec

from rawp_adapters._adapter import Turn, TurnResult
from rawp_adapters._frames import (
    ClientPayload,
    TextDelta,
    TextDone,
    ThinkingDelta,
    ThinkingDone,
    TokenUsage,
    ToolInvokeRequest,
    ToolInvokeResult,
    ToolInvokeStream,
)

if TYPE_CHECKING:
    from structlog.stdlib import BoundLogger

UNFINISHED_TOOL_OUTPUT: Final = "The turn ended before this tool call finished."
REMEMBERED_FINISHED_TOOLS: Final = 1024
"""Finished tool calls a turn remembers, to drop a repeated start of one."""
USAGE_FIELDS: Final = tuple(TokenUsage.model_fields)


# A msgspec Struct, not a dataclass: defined at each ``serve --stdio`` start, ~40x faster.
class TurnState(msgspec.Struct):
    turn: Turn
    aborting: bool = False
    ended: bool = False
    tools: dict[str, None] = msgspec.field(default_factory=dict)
    """Tool calls with no result yet, in the order they started."""
    finished_tools: OrderedDict[str, None] = msgspec.field(default_factory=OrderedDict)
    """The last :data:`REMEMBERED_FINISHED_TOOLS` tool calls that have their result."""
    blocks: dict[tuple[bool, int], list[str]] = msgspec.field(default_factory=dict)
    """Open text (False) and thinking (True) blocks by index: the text so far."""
    redacted: set[int] = msgspec.field(default_factory=set)
    usage: dict[str, int | float] | None = None
    reported_error: bool = False
    """An ``agent.error`` went out during the turn (an ``error`` end needs one first)."""

    def add_text(self, delta: TextDelta) -> None:
        """Keep a text delta's part of its open block."""
        parts = self.blocks.get((False, delta.index))
        if parts is None:
            self.blocks[(False, delta.index)] = parts = []
        parts.append(delta.text)

    def track(self, payload: ClientPayload, log: BoundLogger) -> bool:
        """Keep the turn's open blocks and tool calls; False drops a duplicate or orphan."""
        if type(payload) is TextDelta:  # the most common payload by far
            self.add_text(payload)
            return True
        match payload:
            case TextDelta() | ThinkingDelta():
                key = (isinstance(payload, ThinkingDelta), payload.index)
                parts = self.blocks.get(key)
                if parts is None:
                    self.blocks[key] = parts = []
                parts.append(payload.text)
                if isinstance(payload, ThinkingDelta) and payload.redacted:
                    self.redacted.add(payload.index)
            case TextDone() | ThinkingDone():
                self.blocks.pop((isinstance(payload, ThinkingDone), payload.index), None)
            case ToolInvokeRequest():
                if self.has_tool(payload.invocation_id):
                    log.debug("duplicate tool call dropped", invocation=payload.invocation_id)
                    return False
                self.tools[payload.invocation_id] = None
            case ToolInvokeStream():
                if payload.invocation_id not in self.tools:
                    log.debug("output of no running tool call dropped")
                    return False
            case ToolInvokeResult():
                if payload.invocation_id not in self.tools:
                    log.debug("result of no running tool call dropped")
                    return False
                del self.tools[payload.invocation_id]
                self.finished_tools[payload.invocation_id] = None
                if len(self.finished_tools) > REMEMBERED_FINISHED_TOOLS:
                    self.finished_tools.popitem(last=False)
        return True

    def has_tool(self, invocation_id: str) -> bool:
        """A tool call of this id started in the turn (running, or one of the last
        :data:`REMEMBERED_FINISHED_TOOLS` finished)."""
        return invocation_id in self.tools or invocation_id in self.finished_tools

    def add_usage(self, step: TokenUsage) -> None:
        total = self.usage if self.usage is not None else {}
        for name in USAGE_FIELDS:
            value = getattr(step, name)
            if value is not None:
                total[name] = total.get(name, 0) + value
        self.usage = total

    def total_usage(self, result: TurnResult | None) -> TokenUsage | None:
        """The turn's usage: the sum of its steps, else what the adapter returned."""
        if self.usage is not None:
            return TokenUsage.model_validate(self.usage)
        return result.usage if result is not None else None

    def unfinished(self) -> list[ClientPayload]:
        """What closes what the turn left open: a done frame for each open block, with
        the text so far, and an error result for each tool call still running."""
        turn_id = self.turn.turn_id
        closing: list[ClientPayload] = []
        for (thinking, index), parts in self.blocks.items():
            text = "".join(parts)
            if thinking:
                redacted = index in self.redacted
                closing.append(
                    ThinkingDone(turn_id=turn_id, index=index, text=text, redacted=redacted)
                )
            else:
                closing.append(TextDone(turn_id=turn_id, index=index, text=text))
        closing.extend(
            ToolInvokeResult(
                invocation_id=invocation_id,
                output_type="text",
                output=UNFINISHED_TOOL_OUTPUT,
                is_error=True,
                turn_id=turn_id,
            )
            for invocation_id in self.tools
        )
        return closing
