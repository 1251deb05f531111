"""Sans-IO line framing: bytes in, whole lines out, split on ``\\n`` only.

Never ``str.splitlines()``: it also splits on U+2028/U+2029, which JSON strings
may hold raw. A line longer than the limit is skipped up to the next newline and
reported as :class:`OversizedLine`, so one huge line never ends a session.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class OversizedLine:
    """A line that was longer than the limit and has been skipped."""

    size: int


class LineFramer:
    """Feed it chunks; it returns complete lines (without ``\\n`` or a final ``\\r``).

    Empty lines are dropped. Memory stays bounded by ``max_line_bytes``.
    """

    __slots__ = ("_buffer", "_discarded", "_discarding", "max_line_bytes")

    def __init__(self, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        if max_line_bytes < 1:
            raise ValueError("max_line_bytes must be positive")
        self.max_line_bytes = max_line_bytes
        self._buffer = bytearray()
        self._discarding = False
        self._discarded = 0

    def feed(self, data: bytes) -> list[bytes | OversizedLine]:
        out: list[bytes | OversizedLine]
        parts = data.split(b"\n")
        tail = parts.pop()
        if (
            parts
            and not self._discarding
            and len(self._buffer) + len(data) <= self.max_line_bytes
            and b"\r" not in data
        ):
            # The common case, without a step per line: no line can be over the limit,
            # and only one that began in the buffer can end in "\r".
            if self._buffer:
                self._buffer += parts[0]
                first = bytes(self._buffer)
                self._buffer.clear()
                parts[0] = first[:-1] if first.endswith(b"\r") else first
            out = list(filter(None, parts))
        else:
            out = []
            for part in parts:
                self._finish_line(part, out)
        if self._discarding:
            self._discarded += len(tail)
        else:
            self._buffer += tail
            if len(self._buffer) > self.max_line_bytes:
                self._discarding = True
                self._discarded = len(self._buffer)
                self._buffer.clear()
        return out

    def close(self) -> list[bytes | OversizedLine]:
        """End of stream: a final line without ``\\n`` still counts."""
        out: list[bytes | OversizedLine] = []
        if self._discarding or self._buffer:
            self._finish_line(b"", out)
        return out

    def _finish_line(self, part: bytes, out: list[bytes | OversizedLine]) -> None:
        if self._discarding:
            out.append(OversizedLine(self._discarded + len(part)))
            self._discarding = False
            self._discarded = 0
            return
        if self._buffer:
            self._buffer += part
            line = bytes(self._buffer)
            self._buffer.clear()
        else:
            line = part
        if len(line) > self.max_line_bytes:
            out.append(OversizedLine(len(line)))
            return
        if line.endswith(b"\r"):
            line = line[:-1]
        if line:
            out.append(line)
