"""Showing a session on a terminal: streamed text, thinking, tool calls and errors,
or the raw frames as JSON lines."""

from __future__ import annotations

import json
import os
import re
from typing import Any, BinaryIO, Final, Protocol, TextIO

from rawp_adapters._codec import encode_frame
from rawp_adapters._frames import (
    AgentErrorFrame,
    ClientFrame,
    ModelChangedFrame,
    PlanUpdatedFrame,
    SessionClosed,
    SessionClosedFrame,
    SessionCompactedFrame,
    SessionErrorFrame,
    TextDeltaFrame,
    TextDoneFrame,
    ThinkingDeltaFrame,
    ThinkingDoneFrame,
    ToolInvokeRequestFrame,
    ToolInvokeResultFrame,
    TurnEndFrame,
)

THINKING_PREFIX: Final = "  | "
REDACTED: Final = "[redacted thinking]"
_PLAIN_VALUE: Final = re.compile(r"[\w./@:+-]{1,40}")
_VALUE_LIMIT: Final = 40
_SUMMARY_LIMIT: Final = 100
_STDERR_LINES: Final = 10

_UNSAFE: Final = [
    *range(0x09),
    *range(0x0B, 0x20),
    *range(0x7F, 0xA0),
    *range(0x202A, 0x202F),
    *range(0x2066, 0x206A),
]
"""Control characters (all but tab and newline), DEL, the C1 controls (0x9b is an
8-bit CSI) and the bidi overrides: text with them could drive the terminal (OSC 52
clipboard writes, titles, erasing lines) or show other text than it holds."""
_VISIBLE: Final = {code: f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" for code in _UNSAFE}


def safe_text(text: str) -> str:
    """Untrusted text (an agent's) made harmless for a terminal: control characters
    are shown as escapes (``\\x1b``) instead of acting; ``\\r\\n`` is a line end."""
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    return text.translate(_VISIBLE)


class Console:
    """A text stream that knows whether the cursor is at the start of a line and
    whether it may use ANSI styles."""

    def __init__(self, out: TextIO, *, styled: bool) -> None:
        self.out = out
        self.styled = styled
        self.at_line_start = True

    @classmethod
    def for_stream(cls, out: TextIO) -> Console:
        """Styled only on a terminal, and never when ``NO_COLOR`` is set."""
        return cls(out, styled=is_terminal(out) and "NO_COLOR" not in os.environ)

    def write(self, text: str, style: str = "") -> None:
        """Write ``text``, which may be untrusted: it can never drive the terminal."""
        if not text:
            return
        text = safe_text(text)
        self.out.write(f"\x1b[{style}m{text}\x1b[0m" if style and self.styled else text)
        self.out.flush()
        self.at_line_start = text.endswith("\n")

    def end_line(self) -> None:
        if not self.at_line_start:
            self.write("\n")

    def line(self, text: str, style: str = "") -> None:
        """``text`` on a line of its own."""
        self.end_line()
        self.write(text, style)
        self.write("\n")


DIM: Final = "2"
RED: Final = "31"
YELLOW: Final = "33"
BOLD: Final = "1"


def is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a replaced or closed stream
        return False


class FrameView(Protocol):
    def show(self, frame: ClientFrame) -> None: ...


class JsonlView:
    """Each frame as one line of JSON (:func:`rawp_adapters.encode_frame`)."""

    def __init__(self, out: BinaryIO) -> None:
        self.out = out

    def show(self, frame: ClientFrame) -> None:
        self.out.write(encode_frame(frame))
        self.out.flush()


class TerminalView:
    """Renders frames for a person: text as it streams, thinking dimmed and
    prefixed, one line per tool call start and end, errors in colour."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._block: tuple[str, int] | None = None
        self._streamed: set[tuple[str, int]] = set()
        self._tools: dict[str, str] = {}

    def show(self, frame: ClientFrame) -> None:
        match frame:
            case TextDeltaFrame(payload=p):
                self._stream("text", p.index, p.text)
            case ThinkingDeltaFrame(payload=p):
                if not (p.redacted and ("thinking", p.index) in self._streamed):
                    self._stream("thinking", p.index, REDACTED if p.redacted else p.text)
            case TextDoneFrame(payload=p):
                self._finish("text", p.index, p.text)
            case ThinkingDoneFrame(payload=p):
                self._finish("thinking", p.index, REDACTED if p.redacted else p.text)
            case ToolInvokeRequestFrame(payload=p):
                self._tools[p.invocation_id] = p.tool_name
                self._interrupt_block()
                self.console.line(f"-> {p.tool_name} {summarize_input(p.input)}", BOLD)
            case ToolInvokeResultFrame(payload=p):
                name = self._tools.pop(p.invocation_id, p.invocation_id)
                self._interrupt_block()
                if p.is_error:
                    self.console.line(f"<- {name} failed: {summarize_output(p.output)}", RED)
                else:
                    self.console.line(f"<- {name}: {summarize_output(p.output)}", DIM)
            case AgentErrorFrame(payload=p):
                self._interrupt_block()
                self.console.line(f"error [{p.error_code}]: {p.message}", RED)
                for tail in (p.stderr_tail or "").splitlines()[-_STDERR_LINES:]:
                    self.console.line(f"  {tail}", DIM)
            case SessionErrorFrame(payload=p):
                self._interrupt_block()
                self.console.line(f"session error [{p.error_code}]: {p.message}", YELLOW)
            case SessionCompactedFrame():
                self._interrupt_block()
                self.console.line("(context compacted)", DIM)
            case PlanUpdatedFrame(payload=p):
                self._interrupt_block()
                self.console.line("plan:", BOLD)
                for entry in p.entries:
                    self.console.line(f"  {_PLAN_MARKS[entry.status]} {entry.content}")
            case ModelChangedFrame(payload=p):
                self._interrupt_block()
                level = f", thinking {p.thinking_level}" if p.thinking_level else ""
                self.console.line(f"(model: {p.model or 'unchanged'}{level})", DIM)
            case TurnEndFrame(payload=p):
                self._interrupt_block()
                if p.stop_reason != "end_turn":
                    self.console.line(f"(turn ended: {p.stop_reason})", DIM)
            case SessionClosedFrame(payload=p):
                self.console.end_line()
                if p.reason != "explicit":
                    self.console.line(f"(session closed: {_closed_detail(p)})", DIM)
            case _:
                pass

    def _stream(self, kind: str, index: int, text: str) -> None:
        block = (kind, index)
        if block != self._block:
            self._interrupt_block()
            self._block = block
        self._streamed.add(block)
        if kind == "text":
            self.console.write(text)
            return
        for piece in re.split(r"(?<=\n)", text):
            if self.console.at_line_start and piece:
                self.console.write(THINKING_PREFIX, DIM)
            self.console.write(piece, DIM)

    def _finish(self, kind: str, index: int, text: str) -> None:
        """Ends a block; shows its full text only if no delta of it was shown."""
        block = (kind, index)
        if block not in self._streamed:
            self._stream(kind, index, text)
        self._streamed.discard(block)
        if self._block == block:
            self._interrupt_block()

    def _interrupt_block(self) -> None:
        self._block = None
        self.console.end_line()


_PLAN_MARKS: Final = {"pending": "[ ]", "in_progress": "[>]", "completed": "[x]"}


def _closed_detail(closed: SessionClosed) -> str:
    detail = closed.reason.replace("_", " ")
    if closed.exit_code is not None:
        detail += f", exit code {closed.exit_code}"
    if closed.signal:
        detail += f", {closed.signal}"
    return detail


def summarize_value(value: Any) -> str:
    if isinstance(value, str) and _PLAIN_VALUE.fullmatch(value):
        return value
    text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    return text if len(text) <= _VALUE_LIMIT else text[: _VALUE_LIMIT - 3] + "..."


def summarize_input(tool_input: dict[str, Any] | None) -> str:
    """A short one-line view of tool arguments, e.g. ``{path: notes.txt}``."""
    if not tool_input:
        return "{}"
    text = "{" + ", ".join(f"{k}: {summarize_value(v)}" for k, v in tool_input.items()) + "}"
    return text if len(text) <= _SUMMARY_LIMIT else text[: _SUMMARY_LIMIT - 4] + "...}"


def summarize_output(output: Any) -> str:
    """The first line of a tool's result and how many more there are."""
    if output is None or output == "":
        return "done"
    if not isinstance(output, str):
        output = json.dumps(output, ensure_ascii=False)
    lines = [line for line in output.splitlines() if line.strip()]
    if not lines:
        return "done"
    first = lines[0].strip()
    if len(first) > _SUMMARY_LIMIT:
        first = first[: _SUMMARY_LIMIT - 3] + "..."
    more = len(lines) - 1
    return f"{first} (+{more} more line{'s' if more > 1 else ''})" if more else first
