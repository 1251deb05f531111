"""A feed: the frames of one session in the order the inspector saw them, each checked
against the DPS rules as it arrives. Pages read a feed from any position and wait for
more; nothing here does I/O."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

import anyio

from rawp_adapters._codec import CONTROL_FRAME_TYPES
from rawp_adapters.testing import StreamChecker, Violation

Direction = Literal["agent", "master"]
FeedState = Literal["live", "checking", "ended"]


@dataclass(frozen=True, slots=True)
class Record:
    """One frame: its position in the feed, who sent it, when the inspector got it
    (milliseconds since the epoch; for a recording, the frame's own time, if it has
    one) and its JSON exactly as it came."""

    n: int
    direction: Direction
    received_ms: int | None
    raw: str


@dataclass(frozen=True, slots=True)
class Mark:
    """A rule broken at record ``n``."""

    n: int
    rule: str
    detail: str


def direction_of(frame_type: object) -> Direction:
    return "master" if frame_type in CONTROL_FRAME_TYPES else "agent"


@dataclass(eq=False)
class Feed:
    """The records of one session (``kind``: ``session``, ``remote``, ``recording`` or
    ``replay``). ``checked`` is False for a stream joined in the middle (a remote
    session attached after seq 0), which the rules cannot judge."""

    feed_id: str
    kind: str
    title: str
    checked: bool = True
    records: list[Record] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)
    state: FeedState = "live"
    problem: str | None = None
    """Why the feed ended early (the session failed to start, the link dropped)."""
    _checker: StreamChecker | None = field(default=None)
    _changed: anyio.Event = field(default_factory=anyio.Event)

    def __post_init__(self) -> None:
        if self.checked:
            self._checker = StreamChecker()

    def add(self, raw: str, direction: Direction, received_ms: int | None = None) -> Record:
        record = Record(
            n=len(self.records),
            direction=direction,
            received_ms=received_ms if received_ms is not None else now_ms(),
            raw=raw,
        )
        self.records.append(record)
        if self._checker is not None:
            self._mark(record.n, self._checker.feed(raw))
        self._notify()
        return record

    def load(self, frames: Iterable[tuple[str, Direction, int | None]]) -> None:
        """Many frames at once (a recording), not checked here: the rules' verdict
        comes with :meth:`end`, worked out away from the event loop."""
        self._checker = None
        for raw, direction, received_ms in frames:
            n = len(self.records)
            self.records.append(Record(n, direction, received_ms, raw))
        self.state = "checking"
        self._notify()

    def end(self, *, problem: str | None = None, marks: Iterable[Mark] = ()) -> None:
        """No frame comes after this; the rules about a stream's end are checked (or,
        after :meth:`load`, ``marks`` are the rules the frames broke)."""
        if self.state == "ended":
            return
        self.state = "ended"
        self.problem = problem
        self.marks.extend(marks)
        if self._checker is not None:
            self._mark(max(len(self.records) - 1, 0), self._checker.finish(complete=True))
        self._notify()

    def _mark(self, n: int, violations: list[Violation]) -> None:
        self.marks.extend(Mark(n, v.rule, v.detail) for v in violations)

    def _notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def wait_for_change(self) -> None:
        """Return at the next record, mark or end (at once if the feed has ended)."""
        if self.state != "ended":
            await self._changed.wait()

    def summary(self) -> dict[str, object]:
        return {
            "feed_id": self.feed_id,
            "kind": self.kind,
            "title": self.title,
            "checked": self.checked,
            "state": self.state,
            "problem": self.problem,
            "frames": len(self.records),
            "violations": len(self.marks),
        }


def now_ms() -> int:
    return time.time_ns() // 1_000_000
