"""Blocking terminal I/O off the event loop, on a thread that never holds the process.

``anyio.to_thread`` cannot be used for reads from stdin: a read that is cancelled
keeps its (non-daemon, on asyncio) worker thread blocked, and the interpreter
waits for it at exit. A :class:`DaemonWorker` runs one call at a time on its own
daemon thread; a call whose caller was cancelled is abandoned and its result
dropped. :class:`FdReceiveStream` and :class:`FdSendStream` make blocking file
descriptors anyio byte streams that way.

Writing is the hot path of ``serve --stdio`` (every frame goes through it), so a pipe
or socket is written from the event loop itself (:class:`NonBlockingFdSendStream`, see
:func:`fd_send_stream`): no thread hop per write.
"""

from __future__ import annotations

import os
import queue
import stat
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from functools import partial
from typing import Any, Generic, TypeVar

import anyio
import msgspec
from anyio.abc import ByteReceiveStream, ByteSendStream
from anyio.from_thread import BlockingPortal

T = TypeVar("T")


# A msgspec Struct, not a dataclass: defined at each ``serve --stdio`` start, ~40x faster.
class _Call(msgspec.Struct, Generic[T]):
    function: Callable[[], T]
    done: anyio.Event = msgspec.field(default_factory=anyio.Event)
    result: T | None = None
    error: BaseException | None = None

    def finish(self, result: T | None, error: BaseException | None) -> None:
        self.result = result
        self.error = error
        self.done.set()


class DaemonWorker:
    """Runs blocking calls in order on one daemon thread. Get one from :func:`daemon_worker`."""

    def __init__(self, portal: BlockingPortal, name: str) -> None:
        self._portal = portal
        self._name = name
        self._calls: queue.SimpleQueue[_Call[Any]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    async def call(self, function: Callable[[], T]) -> T:
        """``function()`` on the worker thread. Cancelling the caller abandons the call."""
        pending: _Call[T] = _Call(function)
        self._calls.put(pending)
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name=self._name, daemon=True)
            self._thread.start()
        await pending.done.wait()
        if pending.error is not None:
            raise pending.error
        return pending.result  # type: ignore[return-value]

    def _work(self) -> None:
        while True:
            pending = self._calls.get()
            result: Any = None
            error: BaseException | None = None
            try:
                result = pending.function()
            except Exception as exc:
                error = exc
            try:
                self._portal.call(pending.finish, result, error)
            except RuntimeError:  # the event loop is gone: nobody waits for results
                return


@asynccontextmanager
async def daemon_worker(name: str) -> AsyncIterator[DaemonWorker]:
    async with BlockingPortal() as portal:
        yield DaemonWorker(portal, name)


class FdReceiveStream(ByteReceiveStream):
    """Reads a blocking file descriptor on a worker. Closing leaves the fd open."""

    def __init__(self, worker: DaemonWorker, fd: int) -> None:
        self._worker = worker
        self._fd = fd

    async def receive(self, max_bytes: int = 65536) -> bytes:
        try:
            data = await self._worker.call(partial(os.read, self._fd, max_bytes))
        except OSError as exc:
            raise anyio.BrokenResourceError from exc
        if not data:
            raise anyio.EndOfStream
        return data

    async def aclose(self) -> None:
        pass


class FdSendStream(ByteSendStream):
    """Writes whole chunks to a blocking file descriptor on a worker. Closing leaves
    the fd open."""

    def __init__(self, worker: DaemonWorker, fd: int) -> None:
        self._worker = worker
        self._fd = fd

    async def send(self, item: bytes) -> None:
        try:
            await self._worker.call(partial(_write_all, self._fd, item))
        except OSError as exc:
            raise anyio.BrokenResourceError from exc

    async def aclose(self) -> None:
        pass


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class NonBlockingFdSendStream(ByteSendStream):
    """Writes whole chunks to a non-blocking file descriptor from the event loop,
    waiting for it to become writable when it is full. Closing leaves the fd open."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    async def send(self, item: bytes) -> None:
        view = memoryview(item)
        try:
            while view:
                try:
                    view = view[os.write(self._fd, view) :]
                except BlockingIOError:
                    await anyio.wait_writable(self._fd)
        except OSError as exc:
            raise anyio.BrokenResourceError from exc

    async def aclose(self) -> None:
        pass


@contextmanager
def fd_send_stream(worker: DaemonWorker, fd: int) -> Iterator[ByteSendStream]:
    """A send stream for ``fd``: written from the event loop when it is a pipe or a
    socket (made non-blocking for the while, its flags restored after), through
    ``worker`` otherwise (a regular file or a terminal cannot be waited for)."""
    try:
        mode = os.fstat(fd).st_mode
        flags_before = os.get_blocking(fd)
    except OSError:
        yield FdSendStream(worker, fd)
        return
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
        yield FdSendStream(worker, fd)
        return
    os.set_blocking(fd, False)
    try:
        yield NonBlockingFdSendStream(fd)
    finally:
        with suppress(OSError):
            os.set_blocking(fd, flags_before)
