"""An asyncio event loop for an SDK that runs only on asyncio, whatever the session runs on.

A core makes an :class:`AsyncioIsland` on the session's loop when it starts, runs the
SDK's coroutines there (:meth:`~AsyncioIsland.call`, :meth:`~AsyncioIsland.stream`,
:meth:`~AsyncioIsland.submit`) and stops it when it closes. What the SDK produces comes
back through an :class:`Outbox`: the SDK never waits for the session.

On an asyncio session the island is the session's own loop: no thread, so nothing
crosses threads and no GIL is handed over (a second busy thread makes each hop wait for
the interpreter's switch interval, milliseconds). On trio, or with ``own_thread=True``
(an SDK that blocks its loop, say joining its threads when it stops), it is an asyncio
loop in a daemon thread; while such a thread runs, the interpreter's switch interval is
lowered (:data:`SWITCH_INTERVAL_S`) so that a thread woken by the other gets the GIL
within that time, not within the default 5 ms.

The SDK's coroutines run in a context of their own: none of the session's context
variables (sniffio's name of the session's async library among them) reach the SDK.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import math
import sys
import threading
from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import anyio
from anyio.lowlevel import EventLoopToken, current_token

T = TypeVar("T")
E = TypeVar("E")

Emit = Callable[[E], None]
"""Hands one item of a job to the session (from the island)."""

STOP_GRACE_S = 5.0
"""How long a cancelled SDK job may take to end before the session stops waiting."""
SWITCH_INTERVAL_S = 0.0001
"""The interpreter's switch interval while an island thread runs (unless set lower)."""


def _post(token: EventLoopToken, func: Callable[[], object]) -> None:
    """Run ``func`` soon in the loop of ``token``, from any thread, without waiting; a
    loop that has ended is let be."""
    with contextlib.suppress(anyio.RunFinishedError, RuntimeError):
        token.backend_class.run_sync_soon(func, (), token.native_token)


class Outbox(Generic[T]):
    """Items from the SDK (its loop, or any thread of its own) to the session's loop, in
    the order put, the SDK never waiting. Made on the session's loop, which reads them
    from :attr:`receive`.

    Items put while a hand-over is on its way go with it: the session's loop is woken
    once per batch, not once per item."""

    def __init__(self) -> None:
        self._token = current_token()
        self._host = threading.get_ident()
        self._send, self.receive = anyio.create_memory_object_stream[T](math.inf)
        self._lock = threading.Lock()
        self._pending: list[T] = []
        self.last = anyio.Event()
        """Set once :meth:`put_last` has put its item: nothing else is coming."""

    def put(self, item: T) -> None:
        with self._lock:
            if not self._pending and threading.get_ident() == self._host:
                self._give(item)  # on the session's own loop: nothing to cross
                return
            self._pending.append(item)
            if len(self._pending) > 1:
                return  # the hand-over on its way takes it
        _post(self._token, self._hand_over)

    def put_last(self, item: T) -> None:
        """:meth:`put` the SDK's last item, then set :attr:`last`."""
        self.put(item)
        _post(self._token, self.last.set)

    def close(self) -> None:
        self._send.close()
        self.receive.close()

    def _hand_over(self) -> None:
        with self._lock:
            items, self._pending = self._pending, []
        for item in items:
            self._give(item)

    def _give(self, item: T) -> None:
        # the session may have stopped reading: the turn is over
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._send.send_nowait(item)


@dataclass(frozen=True, slots=True)
class Finished(Generic[T]):
    """The last item of :meth:`AsyncioIsland.stream`: the job's value, or what it raised
    (``asyncio.CancelledError`` when it was cancelled)."""

    value: T | None = None
    error: BaseException | None = None


class Job(concurrent.futures.Future[T]):
    """A coroutine on the island. Unlike ``asyncio.run_coroutine_threadsafe``'s future,
    it is done only once the coroutine has ended, even when cancelled: waiting for it
    after :meth:`cancel` waits for the SDK's own cleanup."""

    def __init__(self, loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, T]) -> None:
        super().__init__()
        self._loop = loop
        self._coro = coro
        self._task: asyncio.Task[T] | None = None
        self._cancelling = False
        self._lock = threading.Lock()

    def start(self) -> None:
        """On the island; the coroutine runs in a context of its own."""
        if not self.set_running_or_notify_cancel():
            self._coro.close()  # cancelled before it started: it never runs
            return
        with self._lock:
            self._task = task = self._loop.create_task(self._coro, context=contextvars.Context())
            if self._cancelling:
                task.cancel()
        task.add_done_callback(self._ended)

    def cancel(self) -> bool:
        """Cancel the coroutine (from any thread); it may still take its time to end."""
        with self._lock:
            self._cancelling = True
            task = self._task
        if task is None:
            super().cancel()  # unless it is starting: then start() cancels its task
            return True
        with contextlib.suppress(RuntimeError):  # the island has stopped
            self._loop.call_soon_threadsafe(task.cancel)
        return True

    def _ended(self, task: asyncio.Task[T]) -> None:
        if task.cancelled():
            self.set_exception(concurrent.futures.CancelledError())
        elif (error := task.exception()) is not None:
            self.set_exception(error)
        else:
            self.set_result(task.result())


class _SwitchInterval:
    """Lowers the interpreter's switch interval while island threads run."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._threads = 0
        self._saved = self._lowered = sys.getswitchinterval()

    def acquire(self) -> None:
        with self._lock:
            if self._threads == 0:
                self._saved = sys.getswitchinterval()
                if self._saved > SWITCH_INTERVAL_S:
                    sys.setswitchinterval(SWITCH_INTERVAL_S)
                # as the interpreter keeps it (whole µs): 0.0001 reads back 9.99…e-05
                self._lowered = sys.getswitchinterval()
            self._threads += 1

    def release(self) -> None:
        with self._lock:
            self._threads -= 1
            if self._threads == 0 and sys.getswitchinterval() == self._lowered:
                sys.setswitchinterval(self._saved)  # unless someone else has set it since


_switch_interval = _SwitchInterval()


class AsyncioIsland:
    """The asyncio loop an SDK runs on, from its making (on the session's loop) to
    :meth:`stop`: the session's loop when that is asyncio (unless ``own_thread``), else a
    loop in a daemon thread named ``name``."""

    def __init__(self, name: str, *, own_thread: bool = False) -> None:
        self._token = current_token()
        native: object = self._token.native_token
        self._jobs: set[Job[Any]] = set()
        self._thread: threading.Thread | None = None
        if isinstance(native, asyncio.AbstractEventLoop) and not own_thread:
            self.loop = native
            return
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        _switch_interval.acquire()
        self._thread.start()

    @property
    def in_thread(self) -> bool:
        """Whether the island is a thread of its own (not the session's loop)."""
        return self._thread is not None

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
            tasks = asyncio.all_tasks(self.loop)
            for task in tasks:
                task.cancel()
            self.loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        finally:
            self.loop.close()
            _switch_interval.release()

    def submit(self, coro: Coroutine[Any, Any, T]) -> Job[T]:
        """Run ``coro`` on the island; the job is done once it has ended."""
        job = Job(self.loop, coro)
        self._jobs.add(job)
        job.add_done_callback(self._jobs.discard)
        try:
            if self._thread is None:
                job.start()  # the session's own loop: started now, not an iteration later
            else:
                self.loop.call_soon_threadsafe(job.start, context=contextvars.Context())
        except RuntimeError:  # the island has stopped: the job never starts
            job.cancel()
        return job

    def call_soon(self, func: Callable[[], object]) -> None:
        """Run ``func`` soon on the island, from any thread (not once it stopped)."""
        with contextlib.suppress(RuntimeError):  # the loop is closed: nothing waits
            self.loop.call_soon_threadsafe(func, context=contextvars.Context())

    def cancel_jobs(self) -> None:
        """Cancel every job still running on the island (from any thread)."""
        for future in list(self._jobs):
            future.cancel()

    async def call(self, job: Callable[[], Awaitable[T]]) -> T:
        """``await job()`` on the island; what it returns or raises. Cancelled, it
        cancels the job and waits for it to end (at most :data:`STOP_GRACE_S`)."""

        async def run() -> T:
            return await job()

        future = self.submit(run())
        await _finished(future, self._token)
        return future.result()

    async def stream(
        self, job: Callable[[Emit[E]], Awaitable[T]]
    ) -> AsyncGenerator[E | Finished[T], None]:
        """Run ``job(emit)`` on the island; yield what it emits, then its
        :class:`Finished`. Stopped early (cancelled, closed), it cancels the job and waits
        for it to end (at most :data:`STOP_GRACE_S`)."""
        outbox: Outbox[E | Finished[T]] = Outbox()

        async def run() -> None:
            try:
                value = await job(outbox.put)
            except BaseException as exc:  # told to the caller, who raises it
                outbox.put(Finished(error=exc))
            else:
                outbox.put(Finished(value=value))

        future = self.submit(run())
        finished = False
        try:
            async for item in outbox.receive:
                finished = isinstance(item, Finished)
                yield item
                if finished:
                    return
        finally:
            if not finished:
                future.cancel()
                ended = _ended(future, self._token)
                with anyio.CancelScope(shield=True), anyio.move_on_after(STOP_GRACE_S):
                    await ended.wait()
            outbox.close()

    async def on_host(self, func: Callable[[], Awaitable[T]]) -> T:
        """From the island: await ``func()`` run on the session's loop."""

        async def in_host() -> T:
            return await func()

        if self._thread is None:
            return await in_host()
        token = self._token
        return await asyncio.to_thread(lambda: anyio.from_thread.run(in_host, token=token))

    async def stop(self) -> None:
        """Cancel what still runs on the island and wait for it (even when cancelled):
        its thread ends, or its jobs on the session's loop (at most
        :data:`STOP_GRACE_S`)."""
        with anyio.CancelScope(shield=True):
            thread = self._thread
            if thread is not None:
                self.call_soon(self.loop.stop)
                await anyio.to_thread.run_sync(thread.join)
                return
            jobs = list(self._jobs)
            for future in jobs:
                future.cancel()
            with anyio.move_on_after(STOP_GRACE_S):
                for future in jobs:
                    await _finished(future, self._token)


def _ended(job: Job[Any], token: EventLoopToken) -> anyio.Event:
    """Set (on the loop of ``token``) once ``job`` has ended."""
    done = anyio.Event()
    job.add_done_callback(lambda _: _post(token, done.set))
    return done


async def _finished(future: Job[Any], token: EventLoopToken) -> None:
    """Wait until ``future`` has ended; cancelled, cancel it and wait for it to end (at
    most :data:`STOP_GRACE_S`)."""
    done = _ended(future, token)
    try:
        await done.wait()
    except BaseException:
        future.cancel()
        with anyio.CancelScope(shield=True), anyio.move_on_after(STOP_GRACE_S):
            await done.wait()
        raise
