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

The parts of a stream (text, thinking) that such a thread sends the session wait until
its loop has nothing ready to run (:class:`_HoldingSelector`, on asyncio's own loop, not
one an application's policy chose, uvloop say): the session's thread then wakes once per
burst of the SDK's work, as the island goes idle, instead of at each part, taking the
GIL from the island in the middle of its work (a streamed answer through pydantic-ai on
trio: 1.5 times the frames/s).

The SDK's coroutines run in a context of their own: none of the session's context
variables (sniffio's name of the session's async library among them) reach the SDK.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import math
import selectors
import sys
import threading
import time
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


HOLD_AT_MOST_S = 0.002
"""How long an island thread that keeps working may hold the parts of a stream it sends
the session (checked between the steps of its loop)."""


def _post_now(token: EventLoopToken, func: Callable[[], object]) -> None:
    with contextlib.suppress(anyio.RunFinishedError, RuntimeError):
        token.backend_class.run_sync_soon(func, (), token.native_token)


def _post(token: EventLoopToken, func: Callable[[], object], *, may_wait: bool = False) -> None:
    """Run ``func`` soon in the loop of ``token``, from any thread, without waiting; a
    loop that has ended is let be. From an island thread, with ``may_wait``, it is held
    until the island idles (:class:`_HoldingSelector`); without, it goes at once, after
    all the island holds."""
    selector = _this_islands_selector()
    if selector is None:
        _post_now(token, func)
        return
    selector.hold(token, func)
    if not may_wait:
        selector.release()


def _release_held() -> None:
    """Post at once what this thread's island holds (nothing on another thread)."""
    selector = _this_islands_selector()
    if selector is not None:
        selector.release()


def _this_islands_selector() -> _HoldingSelector | None:
    selector: _HoldingSelector | None = getattr(_island_thread, "selector", None)
    return selector


_island_thread = threading.local()
"""``selector``: the :class:`_HoldingSelector` of the island whose thread this is."""


class _HoldingSelector(selectors.DefaultSelector):
    """An island thread's selector, which holds what may wait: posted once the loop is
    about to wait for I/O or a timer (nothing is ready to run), once the oldest of it
    has waited :data:`HOLD_AT_MOST_S` while the island kept working, or as soon as
    something that may not wait is posted after it. Used by the island's thread alone."""

    def __init__(self) -> None:
        super().__init__()
        self._held: list[tuple[EventLoopToken, Callable[[], object]]] = []
        self._since = 0.0

    def hold(self, token: EventLoopToken, func: Callable[[], object]) -> None:
        if not self._held:
            self._since = time.monotonic()
        self._held.append((token, func))

    def release(self) -> None:
        """Post all that is held, in the order held."""
        held, self._held = self._held, []
        for token, func in held:
            _post_now(token, func)

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if self._held and (
            timeout is None or timeout > 0 or time.monotonic() - self._since >= HOLD_AT_MOST_S
        ):
            self.release()
        return super().select(timeout)


class Outbox(Generic[T]):
    """Items from the SDK (its loop, or any thread of its own) to the session's loop, in
    the order put, the SDK never waiting. Made on the session's loop, which reads them
    from :attr:`receive`.

    Items put while a hand-over is on its way go with it: the session's loop is woken
    once per batch, not once per item. Items for which ``may_wait`` is true (parts of a
    stream) put on an island's thread start a hand-over that waits until the island
    idles, at most :data:`HOLD_AT_MOST_S`; any other item goes at once, with them."""

    def __init__(self, may_wait: Callable[[T], bool] | None = None) -> None:
        self._token = current_token()
        self._host = threading.get_ident()
        self._send, self.receive = anyio.create_memory_object_stream[T](math.inf)
        self._lock = threading.Lock()
        self._pending: list[T] = []
        self._may_wait = may_wait
        self.last = anyio.Event()
        """Set once :meth:`put_last` has put its item: nothing else is coming."""

    def put(self, item: T) -> None:
        with self._lock:
            if not self._pending and threading.get_ident() == self._host:
                self._give(item)  # on the session's own loop: nothing to cross
                return
            self._pending.append(item)
            on_its_way = len(self._pending) > 1
        may_wait = self._may_wait is not None and self._may_wait(item)
        if not on_its_way:
            _post(self._token, self._hand_over, may_wait=may_wait)
        elif not may_wait:
            _release_held()  # the hand-over on its way takes it, now

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
        self._selector: _HoldingSelector | None = None
        if isinstance(native, asyncio.AbstractEventLoop) and not own_thread:
            self.loop = native
            return
        self.loop = asyncio.new_event_loop()
        if type(self.loop) is asyncio.SelectorEventLoop:  # not one the application chose
            self.loop.close()
            self._selector = _HoldingSelector()
            self.loop = asyncio.SelectorEventLoop(self._selector)
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        _switch_interval.acquire()
        self._thread.start()

    @property
    def in_thread(self) -> bool:
        """Whether the island is a thread of its own (not the session's loop)."""
        return self._thread is not None

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        _island_thread.selector = self._selector
        try:
            self.loop.run_forever()
            tasks = asyncio.all_tasks(self.loop)
            for task in tasks:
                task.cancel()
            self.loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        finally:
            _island_thread.selector = None
            if self._selector is not None:
                self._selector.release()
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
        self,
        job: Callable[[Emit[E]], Awaitable[T]],
        *,
        may_wait: Callable[[E], bool] | None = None,
    ) -> AsyncGenerator[E | Finished[T], None]:
        """Run ``job(emit)`` on the island; yield what it emits, then its
        :class:`Finished`. Stopped early (cancelled, closed), it cancels the job and waits
        for it to end (at most :data:`STOP_GRACE_S`). What ``may_wait`` is true of may
        cross with what follows it (see :class:`Outbox`)."""

        def item_may_wait(item: E | Finished[T]) -> bool:
            return may_wait is not None and not isinstance(item, Finished) and may_wait(item)

        outbox: Outbox[E | Finished[T]] = Outbox(item_may_wait)

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
        _release_held()  # what the SDK sent before the call reaches the session first
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
