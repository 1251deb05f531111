"""Where a feed's frames come from: a session run here, a remote session attached
over NATS, or a recording (opened whole, or replayed step by step or at speed). Each
source runs as a task of the server until its stream ends."""

from __future__ import annotations

import math
from contextlib import AbstractAsyncContextManager, nullcontext
from pathlib import Path
from typing import TextIO

import anyio
import anyio.lowlevel
import anyio.to_process

from rawp_adapters._codec import encode_frame
from rawp_adapters._errors import RawpError
from rawp_adapters._frames import ControlFrame, Envelope
from rawp_adapters.host import SessionLike
from rawp_adapters.inspect._controls import control_frame
from rawp_adapters.inspect._feed import Direction, Feed, Mark, direction_of
from rawp_adapters.inspect._recordings import (
    Line,
    check_recording,
    check_recording_text,
    frame_facts,
    recording_lines,
)

CHECK_HERE_MAX_LINES = 2000
"""A recording up to this long is checked on the event loop (in tens of
milliseconds); a longer one in another process."""

MAX_REPLAY_GAP_S = 2.0
"""A replay at speed waits at most this long between two frames, however long the
recorded session was idle."""


class Live:
    """A session's feed with the session to send control frames to (once it is up)."""

    def __init__(self, feed: Feed, *, record_to: Path | None = None) -> None:
        self.feed = feed
        self.record_to = record_to
        """A JSONL file that gets each frame as it comes (``--record``)."""
        self._sink: TextIO | None = None
        self.session: SessionLike | None = None
        self._lock = anyio.Lock()
        self._started = anyio.Event()
        """Set once the session is up, or could not start."""

    async def send(self, request: object) -> ControlFrame:
        """Build the frame ``request`` asks for, add it to the feed and send it (once
        the session is up). Raises :class:`~rawp_adapters.inspect._controls.BadControl`
        or a :class:`RawpError` (e.g. the session has closed)."""
        await self._started.wait()
        session = self.session
        if session is None or self.feed.state == "ended":
            raise RawpError("the session is not running")
        async with self._lock:  # frames reach the session in the order they are numbered
            frame = control_frame(session.control, request)
            self._add(frame, "master")
            await session.send(frame)
        return frame

    async def run(self, opened: AbstractAsyncContextManager[SessionLike]) -> None:
        """Read the session into the feed until ``session.closed``; a session that
        cannot start (or a link that drops) ends the feed with the reason."""
        problem: str | None = None
        try:
            with self.record_to.open("w") if self.record_to else nullcontext() as sink:
                self._sink = sink
                async with opened as session:
                    self.session = session
                    self._started.set()
                    async for frame in session:
                        self._add(frame, "agent")
        except (RawpError, OSError, ConnectionError, TimeoutError) as exc:
            problem = f"{type(exc).__name__}: {exc}"
        finally:
            self.session = None
            self._sink = None
            self._started.set()
            self.feed.end(problem=problem)

    def _add(self, frame: Envelope, direction: Direction) -> None:
        line = encode_frame(frame).decode()
        self.feed.add(line.rstrip("\n"), direction)
        if self._sink is not None:
            self._sink.write(line)
            self._sink.flush()  # a recording stays whole up to the last frame, whatever stops us


async def open_recording(feed: Feed, text: str) -> None:
    """Every line of ``text`` into the feed at once, then the rules' verdict. A long
    recording is checked in another process: it takes seconds, and a thread would
    hold the GIL the page's readers need."""
    lines = recording_lines(text)
    feed.load(_facts(line) for line in lines)
    if len(lines) > CHECK_HERE_MAX_LINES:
        found = await anyio.to_process.run_sync(check_recording_text, text)
    else:
        found = check_recording(lines)
    index = {line.number: n for n, line in enumerate(lines)}
    feed.end(marks=[Mark(index.get(number, 0), v.rule, v.detail) for number, v in found])


class Replay:
    """A recording played into a feed: paused at first, then a frame at a time
    (:meth:`step`) or at ``speed`` times the recorded pace (:meth:`play`)."""

    def __init__(self, feed: Feed, lines: list[Line]) -> None:
        self.feed = feed
        self._lines = lines
        self._next = 0
        self._steps = 0
        self.speed: float | None = None
        """``None`` while paused; ``math.inf`` for as fast as possible."""
        self._wake = anyio.Event()

    @property
    def position(self) -> int:
        return self._next

    def step(self, frames: int = 1) -> None:
        self.speed = None
        self._steps += frames
        self._poke()

    def play(self, speed: float) -> None:
        if not speed > 0:
            raise ValueError("speed must be more than 0")
        self.speed = speed
        self._poke()

    def pause(self) -> None:
        self.speed = None
        self._steps = 0

    def _poke(self) -> None:
        self._wake.set()
        self._wake = anyio.Event()

    async def run(self) -> None:
        while self._next < len(self._lines):
            if self.speed is None and not self._steps:
                await self._wake.wait()
                continue
            if self.speed is not None and self.speed != math.inf and self._next > 0:
                gap = self._gap_s(self._next)
                if gap > 0:
                    with anyio.move_on_after(gap / self.speed):
                        await self._wake.wait()
                        continue  # paused, stepped or sped up meanwhile: think again
            if self.speed is None:
                self._steps -= 1
            self.feed.add(*_facts(self._lines[self._next]))
            self._next += 1
            if self.speed == math.inf and self._next % 1000 == 0:
                await anyio.lowlevel.checkpoint()  # let the page's readers in
        self.feed.end()

    def _gap_s(self, index: int) -> float:
        before = frame_facts(self._lines[index - 1].text)[1]
        after = frame_facts(self._lines[index].text)[1]
        if before is None or after is None:
            return 0.0
        return min(max(after - before, 0) / 1000, MAX_REPLAY_GAP_S)


def _facts(line: Line) -> tuple[str, Direction, int | None]:
    """A recorded line as the feed keeps it: its time is the frame's own."""
    kind, when = frame_facts(line.text)
    return line.text, direction_of(kind), when
