"""Reading the agent's stdout: chunks to lines to typed messages, bad input reported."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import anyio
import anyio.abc

from rawp_adapter_process._wire import WireError, WireMessage, decode_batch, decode_line
from rawp_adapters import LineFramer, OversizedLine
from rawp_adapters.frames import AgentError

if TYPE_CHECKING:
    from structlog.stdlib import BoundLogger

READ_BYTES = 256 * 1024
"""The most read from the pipe at once."""
BATCH_MESSAGES = 64
"""The most messages handed on at once. A batch is what one read brings (it never waits
for more to come), cut into batches this long so that a slow host is seen taking them
one batch at a time (see :meth:`MessageReader.drained`)."""
_PREVIEW_BYTES = 200
_LOGGED_SKIPS = 20
"""Skipped lines logged one by one; the rest are counted (an agent may print banners or
junk without end, before it is ready or after)."""

OnMessages = Callable[[list[WireMessage]], Awaitable[None]]
OnError = Callable[[AgentError], Awaitable[None]]


class MessageReader:
    """Feeds every message on the agent's stdout to ``on_messages`` until it ends, the
    messages of one read together, in order.

    An oversized line is skipped and reported through ``on_error`` (FRAME_TOO_LARGE); a
    line that is not a JSON event is skipped, and logged if it is one of the first
    :data:`_LOGGED_SKIPS` (then once that the rest go unlogged, and their count at the
    end); types nobody reads are dropped. Nothing is kept of a skipped line.
    """

    def __init__(
        self,
        stream: anyio.abc.ByteReceiveStream,
        *,
        max_line_bytes: int,
        on_messages: OnMessages,
        on_error: OnError,
        log: BoundLogger,
    ) -> None:
        self._stream = stream
        self._framer = LineFramer(max_line_bytes)
        self._max_line_bytes = max_line_bytes
        self._on_messages = on_messages
        self._on_error = on_error
        self._log = log
        self._lines = 0
        self._skipped = 0
        self.done = anyio.Event()
        """Set at the end of stdout (or when the reader stops)."""

    async def run(self) -> None:
        try:
            while True:
                try:
                    chunk = await self._stream.receive(READ_BYTES)
                except anyio.EndOfStream:
                    break
                await self._handle(self._framer.feed(chunk))
            await self._handle(self._framer.close())
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        finally:
            if self._skipped > _LOGGED_SKIPS:
                self._log.warning("agent lines that were not JSON events", skipped=self._skipped)
            self.done.set()

    async def drained(self, idle: float) -> bool:
        """Wait for the end of stdout while lines keep coming (a slow host may hold them
        up); give up after ``idle`` seconds without one. True if the end was reached."""
        while not self.done.is_set():
            seen = self._lines
            with anyio.move_on_after(idle):
                await self.done.wait()
            if self._lines == seen:
                break
        return self.done.is_set()

    async def _handle(self, items: list[bytes | OversizedLine]) -> None:
        for start in range(0, len(items), BATCH_MESSAGES):
            batch = items[start : start + BATCH_MESSAGES]
            self._lines += len(batch)
            messages = decode_batch(batch)
            if messages is None:
                await self._handle_one_by_one(batch)
            elif messages:
                await self._on_messages(messages)

    async def _handle_one_by_one(self, batch: list[bytes | OversizedLine]) -> None:
        """A batch with a line that is not a known event: each line on its own, the
        messages before an oversized line handed on before it is reported."""
        messages: list[WireMessage] = []
        for item in batch:
            if isinstance(item, OversizedLine):
                if messages:
                    await self._on_messages(messages)
                    messages = []
                await self._oversized(item)
                continue
            try:
                message = decode_line(item)
            except WireError as exc:
                self._skip(item, exc)
                continue
            if message is not None:
                messages.append(message)
        if messages:
            await self._on_messages(messages)

    async def _oversized(self, item: OversizedLine) -> None:
        await self._on_error(
            AgentError(
                severity="error",
                error_code="FRAME_TOO_LARGE",
                message=f"the agent wrote a {item.size}-byte line, over the "
                f"{self._max_line_bytes}-byte limit; it was skipped",
            )
        )

    def _skip(self, line: bytes, error: WireError) -> None:
        self._skipped += 1
        if self._skipped <= _LOGGED_SKIPS:
            self._log.warning(
                "agent line that is not a JSON event skipped",
                error=str(error),
                size=len(line),
                preview=line[:_PREVIEW_BYTES].decode("utf-8", "replace"),
            )
        elif self._skipped == _LOGGED_SKIPS + 1:
            self._log.warning(
                "the agent keeps writing lines that are not JSON events; "
                "they are skipped without a log line each (counted at the end)"
            )
