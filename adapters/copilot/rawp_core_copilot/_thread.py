"""The asyncio loop the Copilot SDK runs on, in a daemon thread of the core's own.

The SDK runs only on asyncio (its JSON-RPC client reads the CLI in a thread and hands
what it reads to the loop that started it), while a session may run on trio; and on an
asyncio session it would share the session's loop with the CLI's chatter. So the SDK
gets a loop of its own, and what it hands the session goes through :class:`Inbox`.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import math
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
import anyio.lowlevel

T = TypeVar("T")

THREAD_NAME = "rawp-copilot"
STOP_GRACE_S = 5.0
"""How long a cancelled SDK call may take to end before the caller stops waiting."""


def _scheduler() -> Callable[[Callable[[], None]], object]:
    """Schedules a callback on the caller's loop (trio or asyncio) from any thread."""
    native: Any = anyio.lowlevel.current_token().native_token
    schedule: Callable[[Callable[[], None]], object] = (
        native.run_sync_soon if hasattr(native, "run_sync_soon") else native.call_soon_threadsafe
    )
    return schedule


class Inbox:
    """Items from the SDK's thread to the caller's loop, the SDK never waiting. Made on
    the caller's loop; :meth:`put` from the SDK's thread."""

    def __init__(self) -> None:
        self._schedule = _scheduler()
        self._send, self.receive = anyio.create_memory_object_stream[Any](math.inf)
        self.last = anyio.Event()
        """Set once :meth:`put_last` has put its item: nothing else is coming."""

    def put(self, item: Any) -> None:
        def hand_over() -> None:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                self._send.send_nowait(item)

        with contextlib.suppress(RuntimeError):  # the caller's loop is gone: nobody to tell
            self._schedule(hand_over)

    def put_last(self, item: Any) -> None:
        """:meth:`put` the SDK's last item (and set :attr:`last`)."""
        self.put(item)
        with contextlib.suppress(RuntimeError):
            self._schedule(self.last.set)

    def close(self) -> None:
        self._send.close()
        self.receive.close()


class SdkThread:
    """An asyncio loop in a daemon thread, running until :meth:`stop`."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, name=THREAD_NAME, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            self.loop.close()

    async def call(self, job: Callable[[], Awaitable[T]]) -> T:
        """``await job()`` on the SDK's loop; what it returns or raises. Cancelled, it
        cancels the job and waits for it to end (at most :data:`STOP_GRACE_S`)."""

        async def run() -> T:
            return await job()

        # In a context of its own: the caller's (trio's sniffio marker among it) would
        # make the SDK's libraries take the asyncio loop for trio.
        future = contextvars.Context().run(asyncio.run_coroutine_threadsafe, run(), self.loop)
        done = anyio.Event()
        schedule = _scheduler()

        def finished(_: object) -> None:
            with contextlib.suppress(RuntimeError):
                schedule(done.set)

        future.add_done_callback(finished)
        try:
            await done.wait()
        except BaseException:
            future.cancel()
            with anyio.CancelScope(shield=True), anyio.move_on_after(STOP_GRACE_S):
                await done.wait()
            raise
        return future.result()

    def call_soon(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` on the SDK's loop (from any thread)."""
        with contextlib.suppress(RuntimeError):  # the loop is closed: nothing waits
            self.loop.call_soon_threadsafe(callback)

    async def stop(self) -> None:
        """Stop the loop and wait for its thread (even when cancelled)."""
        with anyio.CancelScope(shield=True):
            self.call_soon(self.loop.stop)
            await anyio.to_thread.run_sync(self._thread.join)
