"""What an agent core streams while it runs a prompt: :data:`CoreEvent` values.

A core never sees DPS frames; the SDK adapter turns these events into the frame
payloads of :mod:`rawp_adapters.frames` (``TextChunk`` → ``TextDelta``, ``TextEnd`` →
``TextDone``, ``ToolStarted`` → ``ToolInvokeRequest``, …), so the two sets of names
never meet. Blocks of text and thinking are numbered per turn from 0 (``index``); a tool
call is named by the core's own ``call_id``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rawp_adapters.frames import OutputType, PlanEntry, StopReason


@dataclass(frozen=True, slots=True)
class TextChunk:
    """New text of content block ``index`` (counted per turn, from 0)."""

    index: int
    text: str


@dataclass(frozen=True, slots=True)
class TextEnd:
    """Block ``index`` is complete; ``text`` is all of it."""

    index: int
    text: str


@dataclass(frozen=True, slots=True)
class ThinkingChunk:
    """New thinking of block ``index``; ``redacted`` when the text is not readable."""

    index: int
    text: str
    redacted: bool = False


@dataclass(frozen=True, slots=True)
class ThinkingEnd:
    """Thinking block ``index`` is complete; ``text`` is all of it."""

    index: int
    text: str
    redacted: bool = False


@dataclass(frozen=True, slots=True)
class ToolStarted:
    """The agent calls a tool. ``call_id`` is the core's own id for the call."""

    call_id: str
    tool_name: str
    input: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ToolProgress:
    """New output of a running tool call (only the new part)."""

    call_id: str
    output: str


@dataclass(frozen=True, slots=True)
class ToolFinished:
    """The tool call ``call_id`` ended with ``output`` (an error when ``is_error``)."""

    call_id: str
    output: Any = None
    is_error: bool = False
    output_type: OutputType = "text"


@dataclass(frozen=True, slots=True)
class UsageReport:
    """Usage of one step (one model call or the whole turn); steps of a turn add up."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    cost_usd: float | None = None


@dataclass(frozen=True, slots=True)
class PlanChanged:
    """The agent's whole plan (todo list) after a change, in order."""

    entries: Sequence[PlanEntry]


@dataclass(frozen=True, slots=True)
class Stopped:
    """Why the turn ended; the last event of a run. A run that ends without one
    ended with ``end_turn``. Failures are raised as
    :class:`~rawp_adapter_sdk.CoreError` instead."""

    reason: StopReason = "end_turn"


CoreEvent = (
    TextChunk
    | TextEnd
    | ThinkingChunk
    | ThinkingEnd
    | ToolStarted
    | ToolProgress
    | ToolFinished
    | UsageReport
    | PlanChanged
    | Stopped
)
"""Everything a core streams, discriminated by class."""

PARTS = (TextChunk, ThinkingChunk, ToolProgress)
"""The events that carry a part of a stream (text, thinking, a tool's output): from an
island's thread, they may cross to the session with what follows them
(:meth:`~rawp_adapter_sdk.islands.AsyncioIsland.stream`'s ``may_wait``)."""

__all__ = [
    "PARTS",
    "CoreEvent",
    "PlanChanged",
    "Stopped",
    "TextChunk",
    "TextEnd",
    "ThinkingChunk",
    "ThinkingEnd",
    "ToolFinished",
    "ToolProgress",
    "ToolStarted",
    "UsageReport",
]
