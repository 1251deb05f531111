"""An asyncio event loop in a thread of its own, for an SDK that runs only on asyncio.

The host's loop (asyncio or trio) never blocks on it: coroutines are submitted to the
island, and what they produce comes back through :class:`Outbox`, which hands each item
to the host's loop without waiting for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import Awaitable, Callable, Coroutine
from concurrent.futures import Future
from typing import Any, Generic, TypeVar

import anyio
from anyio.lowlevel import EventLoopToken, current_token
from anyio.streams.memory import MemoryObjectSendStream

T = TypeVar("T")


def post(token: EventLoopToken, func: Callable[[], object]) -> None:
    """Run ``func`` soon in the loop of ``token``, from any thread, without waiting; a
    loop that has ended is let be."""
    with contextlib.suppress(anyio.RunFinishedError):
        token.backend_class.run_sync_soon(func, (), token.native_token)


class Outbox(Generic[T]):
    """The island's end of a host-side memory stream: items arrive in the order put.

    Items put while a delivery is on its way go with it: the host's loop is woken once
    per batch, not once per item."""

    def __init__(self, token: EventLoopToken, send: MemoryObjectSendStream[T]) -> None:
        self._token = token
        self._send = send
        self._lock = threading.Lock()
        self._pending: list[T] = []

    def put(self, item: T) -> None:
        with self._lock:
            self._pending.append(item)
            if len(self._pending) > 1:
                return  # the delivery on its way takes it
        post(self._token, self._deliver)

    def _deliver(self) -> None:
        with self._lock:
            items, self._pending = self._pending, []
        # the host may have stopped reading: the turn is over
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            for item in items:
                self._send.send_nowait(item)


class Island:
    """One asyncio loop in a daemon thread, from :meth:`start` to :meth:`stop`."""

    def __init__(self, name: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _main(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_forever()
            tasks = asyncio.all_tasks(self._loop)
            for task in tasks:
                task.cancel()
            self._loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            self._loop.run_until_complete(self._loop.shutdown_asyncgens())
        finally:
            self._loop.close()

    def submit(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        """Run ``coro`` on the island; cancelling the future cancels it. It runs in a
        context of its own: none of the host's context variables (sniffio's name of the
        host's async library among them) reach the SDK."""
        return contextvars.Context().run(asyncio.run_coroutine_threadsafe, coro, self._loop)

    def call_soon(self, func: Callable[[], object]) -> None:
        """Run ``func`` soon on the island, from any thread (not once it stopped)."""
        if not self._loop.is_closed():
            self._loop.call_soon_threadsafe(func, context=contextvars.Context())

    async def call(self, func: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """Await ``func()`` run on the island; cancelled with the caller."""
        token = current_token()
        done = anyio.Event()
        future = self.submit(func())
        future.add_done_callback(lambda _: post(token, done.set))
        try:
            await done.wait()
        finally:
            future.cancel()
        return future.result()

    async def stop(self) -> None:
        """Cancel what still runs there and end the thread."""
        if not self._thread.is_alive():
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        await anyio.to_thread.run_sync(self._thread.join)


async def on_host(token: EventLoopToken, func: Callable[[], Awaitable[T]]) -> T:
    """From the island: await ``func()`` run in the host's loop of ``token``."""

    async def in_host() -> T:
        return await func()

    def blocking() -> T:
        return anyio.from_thread.run(in_host, token=token)

    return await asyncio.to_thread(blocking)
