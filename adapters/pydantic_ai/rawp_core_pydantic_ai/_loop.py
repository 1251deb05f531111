"""The asyncio event loop pydantic-ai runs on.

pydantic-ai runs only on asyncio (it starts asyncio tasks of its own), while a session
may run on trio. On trio, every run of the SDK goes to an asyncio loop in a thread of
its own; on asyncio, to a task of the session's own loop (a thread would make the
session wait for the GIL while the SDK works). Either way what the run streams comes
back to the session's loop through a memory stream, the SDK never waiting for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import math
import threading
from collections.abc import AsyncGenerator, Awaitable, Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

import anyio
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectSendStream

T = TypeVar("T")
E = TypeVar("E")

STOP_GRACE_S = 5.0
"""How long a cancelled SDK run may take to end before the caller stops waiting."""


@dataclass(frozen=True, slots=True)
class Finished(Generic[T]):
    """The last item of :meth:`SdkLoop.stream`: the job's value, or what it raised
    (``asyncio.CancelledError`` when it was cancelled)."""

    value: T | None = None
    error: BaseException | None = None


Emit = Callable[[Any], None]
"""Hands one item to the caller; called on the SDK loop."""


class _Mailbox:
    """Items from the SDK's thread to the caller's loop without the SDK waiting: the
    first item of a batch schedules one hand-over on the caller's loop, which passes
    on everything put until it runs."""

    def __init__(self, send: MemoryObjectSendStream[Any]) -> None:
        native: Any = anyio.lowlevel.current_token().native_token
        # trio's token, or the asyncio loop: each schedules a callback from any thread
        self._schedule: Callable[[Callable[[], None]], object] = (
            native.run_sync_soon
            if hasattr(native, "run_sync_soon")
            else native.call_soon_threadsafe
        )
        self._send = send
        self._lock = threading.Lock()
        self._items: list[Any] = []

    def put(self, item: Any) -> None:
        """On the SDK's thread."""
        with self._lock:
            self._items.append(item)
            if len(self._items) > 1:
                return  # its hand-over is scheduled already
        with contextlib.suppress(RuntimeError):  # the caller's loop is gone: nobody to tell
            self._schedule(self._hand_over)

    def _hand_over(self) -> None:
        """On the caller's loop."""
        with self._lock:
            items, self._items = self._items, []
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            for item in items:
                self._send.send_nowait(item)


class SdkLoop:
    """The session's asyncio loop, or one running in a daemon thread until :meth:`stop`
    when the session runs on another library (trio). Made on the session's loop."""

    def __init__(self) -> None:
        native: object = anyio.lowlevel.current_token().native_token
        self._thread: threading.Thread | None = None
        if isinstance(native, asyncio.AbstractEventLoop):
            self._loop = native
        else:
            self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(
                target=self._serve, name="rawp-pydantic-ai", daemon=True
            )
            self._thread.start()
        self._current: Future[None] | None = None

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_forever()
        finally:
            self._loop.run_until_complete(self._loop.shutdown_asyncgens())
            self._loop.close()

    def cancel(self) -> None:
        """Cancel the job running now, if any (from any thread)."""
        if self._current is not None:
            self._current.cancel()

    async def stream(self, job: Callable[[Emit], Awaitable[T]]) -> AsyncGenerator[Any, None]:
        """Run ``job(emit)`` on the SDK loop; yield what it emits, then its
        :class:`Finished`. Stopped early (cancelled, closed), it cancels the job and waits
        for it to end (at most :data:`STOP_GRACE_S`)."""
        send, receive = anyio.create_memory_object_stream[Any](math.inf)
        emit = _Mailbox(send).put

        async def wrapped() -> None:
            try:
                value = await job(emit)
            except BaseException as exc:  # told to the caller, who raises it
                emit(Finished(error=exc))
            else:
                emit(Finished(value=value))

        # In a context of its own: the caller's (trio's sniffio marker among it) would
        # make the SDK's HTTP client take the asyncio loop for trio.
        future = contextvars.Context().run(asyncio.run_coroutine_threadsafe, wrapped(), self._loop)
        self._current = future
        finished = False
        try:
            async for item in receive:
                finished = isinstance(item, Finished)
                yield item
                if finished:
                    return
        finally:
            if self._current is future:
                self._current = None
            if not finished:
                future.cancel()
                with anyio.CancelScope(shield=True), anyio.move_on_after(STOP_GRACE_S):
                    async for item in receive:
                        if isinstance(item, Finished):
                            break
            send.close()
            receive.close()

    async def call(self, job: Callable[[], Awaitable[T]]) -> T:
        """``await job()`` on the SDK loop; what it returns or raises."""

        async def run(emit: Emit) -> T:
            del emit
            return await job()

        async with contextlib.aclosing(self.stream(run)) as items:
            async for item in items:
                if isinstance(item, Finished):
                    if item.error is not None:
                        raise item.error
                    return cast(T, item.value)
        raise AssertionError("an SDK job ended without its result")

    async def stop(self) -> None:
        """Stop the loop of its own and wait for its thread (even when cancelled)."""
        thread = self._thread
        if thread is None:
            return  # the session's loop goes on
        with anyio.CancelScope(shield=True):
            self._loop.call_soon_threadsafe(self._loop.stop)
            await anyio.to_thread.run_sync(thread.join)
