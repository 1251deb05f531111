"""An ordered frame queue with soft backpressure.

Putting never blocks, so ``seq`` order is exactly put order; a producer that wants
to be slowed down awaits :meth:`FrameQueue.wait_for_room` after putting. The
runtime's own frames (turn ends, errors, ``session.closed``) never wait, so a host
that stopped reading cannot wedge a shutdown.
"""

from __future__ import annotations

from collections import deque
from typing import Generic, TypeVar

import anyio

T = TypeVar("T")


class FrameQueue(Generic[T]):
    def __init__(self, bound: int) -> None:
        if bound < 1:
            raise ValueError("bound must be positive")
        self._bound = bound
        self._items: deque[T] = deque()
        self._closed = False
        self._readable: anyio.Event | None = None
        self._room: anyio.Event | None = None

    def __len__(self) -> int:
        return len(self._items)

    @property
    def full(self) -> bool:
        """At or over the bound: a producer should :meth:`wait_for_room`."""
        return len(self._items) >= self._bound

    def put(self, item: T) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        self._items.append(item)
        if self._readable is not None:
            self._readable.set()
            self._readable = None

    def put_many(self, items: list[T]) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        self._items.extend(items)
        if self._readable is not None:
            self._readable.set()
            self._readable = None

    async def wait_for_room(self) -> None:
        while len(self._items) >= self._bound and not self._closed:
            if self._room is None:
                self._room = anyio.Event()
            await self._room.wait()

    def close(self) -> None:
        """No more puts; readers drain what is left, then get ``EndOfStream``."""
        self._closed = True
        for event in (self._readable, self._room):
            if event is not None:
                event.set()
        self._readable = self._room = None

    async def get(self) -> T:
        while not self._items:
            if self._closed:
                raise anyio.EndOfStream
            if self._readable is None:
                self._readable = anyio.Event()
            await self._readable.wait()
        item = self._items.popleft()
        if self._room is not None and len(self._items) < self._bound:
            self._room.set()
            self._room = None
        return item

    async def get_all(self) -> list[T]:
        """Every item queued, at least one (waits for it); ``EndOfStream`` once closed
        and drained. For a reader that handles what came at once together."""
        while not self._items:
            if self._closed:
                raise anyio.EndOfStream
            if self._readable is None:
                self._readable = anyio.Event()
            await self._readable.wait()
        items = list(self._items)
        self._items.clear()
        if self._room is not None:
            self._room.set()
            self._room = None
        return items

    def __aiter__(self) -> FrameQueue[T]:
        return self

    async def __anext__(self) -> T:
        items = self._items
        if items and self._room is None:  # the hot path: no wait, nobody to wake
            return items.popleft()
        try:
            return await self.get()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None
