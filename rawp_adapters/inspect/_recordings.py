"""Recordings: a session's frames as JSONL, one frame a line exactly as it came (the
Master's control frames among them), the same lines ``rawp-adapters run --jsonl``
prints. Reading, checking and timing them; no I/O."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

import msgspec

from rawp_adapters.testing import StreamChecker, Violation


@dataclass(frozen=True, slots=True)
class Line:
    """A non-blank line of a recording and its number in the file (from 1)."""

    number: int
    text: str


def recording_lines(text: str) -> list[Line]:
    return [
        Line(number, line.rstrip("\r"))
        for number, line in enumerate(text.split("\n"), start=1)
        if line.strip()
    ]


def check_recording(lines: Iterable[Line]) -> list[tuple[int, Violation]]:
    """Every rule the recording breaks, with the line it is found at (the stream's
    end is the last line)."""
    checker = StreamChecker()
    found: list[tuple[int, Violation]] = []
    last = 0
    for line in lines:
        last = line.number
        found.extend((line.number, v) for v in checker.feed(line.text))
    found.extend((last, v) for v in checker.finish(complete=True))
    return found


def check_recording_text(text: str) -> list[tuple[int, Violation]]:
    return check_recording(recording_lines(text))


class _Facts(msgspec.Struct):
    type: object = None
    timestamp: object = None


_decode_facts = msgspec.json.Decoder(_Facts).decode


def frame_facts(text: str) -> tuple[object, int | None]:
    """A line's frame type and its own ``timestamp`` in milliseconds since the epoch
    (``None`` for what a line lacks or cannot say). Reads only those two fields: a
    long recording has many lines."""
    try:
        facts = _decode_facts(text)
    except msgspec.MsgspecError:
        return None, None
    if not isinstance(facts.timestamp, str):
        return facts.type, None
    try:
        when = datetime.fromisoformat(facts.timestamp.replace("Z", "+00:00"))
    except ValueError:
        return facts.type, None
    return facts.type, int(when.timestamp() * 1000)
