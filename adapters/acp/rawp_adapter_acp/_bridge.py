"""Where the ACP SDK runs. ``agent-client-protocol`` is asyncio-only (its connection
makes asyncio tasks and futures), so:

- on an asyncio host the SDK runs in the session's own event loop (:class:`SameLoop`);
- on a trio host it runs in an asyncio event loop of its own, in a thread started with
  an anyio blocking portal (:class:`ThreadLoop`). The agent process, its pipes and the
  SDK connection all live in that loop; the adapter's calls cross into it, and what the
  agent sends crosses back as items posted, in order, to a memory stream the session's
  loop reads.

Everything the SDK side does is written once, against :class:`Bridge`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import math
from collections.abc import Awaitable, Callable, Coroutine
from contextlib import AbstractContextManager
from typing import Any, TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
import sniffio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

T = TypeVar("T")
Spawner = Callable[[Callable[[], Coroutine[Any, Any, object]]], None]


class Bridge:
    """Calls into the SDK's loop (:meth:`call`, :meth:`spawn`) and items back out
    (:meth:`post`, read from :attr:`items` in the session's loop)."""

    def __init__(self) -> None:
        send, receive = anyio.create_memory_object_stream[object](math.inf)
        self._send: MemoryObjectSendStream[object] = send
        self.items: MemoryObjectReceiveStream[object] = receive

    @staticmethod
    def for_current_loop(start_soon: Spawner) -> Bridge:
        """:class:`SameLoop` on asyncio (``start_soon`` runs its background tasks, e.g.
        the session's), else :class:`ThreadLoop`."""
        if sniffio.current_async_library() == "asyncio":
            return SameLoop(start_soon)
        return ThreadLoop()

    async def open(self) -> None:
        """Start the SDK's loop (where it needs one)."""

    async def call(self, func: Callable[..., Awaitable[T]], *args: Any) -> T:
        raise NotImplementedError

    def spawn(self, func: Callable[[], Coroutine[Any, Any, object]]) -> None:
        """Run ``func`` in the SDK's loop until :meth:`aclose`."""
        raise NotImplementedError

    def post(self, item: object) -> None:
        """From the SDK's loop: hand ``item`` to the session's loop, in order."""
        raise NotImplementedError

    def post_here(self, item: object) -> None:
        """From the session's loop: queue ``item`` behind everything posted so far."""
        self._deliver(item)

    def _deliver(self, item: object) -> None:
        """Queue ``item`` for the session's loop; one that comes after :meth:`aclose` (the
        agent's exit seen while its session ends, say) has no reader left and is dropped."""
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._send.send_nowait(item)

    def resolve(self, future: asyncio.Future[T], value: T) -> None:
        """From the session's loop: complete a future of the SDK's loop."""
        loop = future.get_loop()

        def settle() -> None:
            if not future.done():
                future.set_result(value)

        loop.call_soon_threadsafe(settle)

    async def aclose(self) -> None:
        """Stop the SDK's loop and everything spawned in it."""
        self._send.close()


class SameLoop(Bridge):
    def __init__(self, start_soon: Spawner) -> None:
        super().__init__()
        self._start_soon = start_soon

    async def call(self, func: Callable[..., Awaitable[T]], *args: Any) -> T:
        return await func(*args)

    def spawn(self, func: Callable[[], Coroutine[Any, Any, object]]) -> None:
        self._start_soon(func)

    def post(self, item: object) -> None:
        self._deliver(item)


class ThreadLoop(Bridge):
    def __init__(self) -> None:
        super().__init__()
        self._token = anyio.lowlevel.current_token()
        self._cm: AbstractContextManager[anyio.from_thread.BlockingPortal] | None = None
        self._portal: anyio.from_thread.BlockingPortal | None = None
        self._tasks: set[asyncio.Task[object]] = set()

    async def open(self) -> None:
        def start() -> anyio.from_thread.BlockingPortal:
            self._cm = anyio.from_thread.start_blocking_portal("asyncio")
            return self._cm.__enter__()

        self._portal = await anyio.to_thread.run_sync(start)

    async def call(self, func: Callable[..., Awaitable[T]], *args: Any) -> T:
        assert self._portal is not None
        future: concurrent.futures.Future[T] = self._portal.start_task_soon(func, *args)
        try:
            return await anyio.to_thread.run_sync(future.result, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            future.cancel()
            raise

    def spawn(self, func: Callable[[], Coroutine[Any, Any, object]]) -> None:
        # Called in the SDK's loop (where the portal's own methods may not be used).
        task = asyncio.get_running_loop().create_task(func())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _cancel_tasks(self) -> None:
        for task in list(self._tasks):
            task.cancel()

    def post(self, item: object) -> None:
        # Never wait for the session's loop here: it may itself be blocked handing a call to
        # this loop (``start_task_soon`` waits for this thread), which deadlocked both. The
        # native token's ``run_sync_soon`` (trio) / ``call_soon_threadsafe`` (asyncio)
        # queues without waiting and keeps the order.
        native = self._token.native_token
        run_soon = getattr(native, "run_sync_soon", None) or native.call_soon_threadsafe  # type: ignore[attr-defined]

        with contextlib.suppress(RuntimeError):  # the session's loop has finished
            run_soon(lambda: self._deliver(item))

    async def aclose(self) -> None:
        cm, self._cm = self._cm, None
        if cm is not None:
            portal = self._portal

            def stop() -> None:
                if portal is not None:
                    with contextlib.suppress(RuntimeError):
                        portal.call(self._cancel_tasks)
                        portal.call(portal.stop, True)  # cancel what still runs there
                cm.__exit__(None, None, None)

            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(stop)
        await super().aclose()
