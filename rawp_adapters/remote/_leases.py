"""Watching the lease bucket: when a session's lease expires (the server's ``MaxAge``
delete marker), its worker is gone, and the watcher writes its closing frames. Every
worker watches every lease; a Master's library watches those of its own sessions.
A worker that starts also closes the sessions whose lease expired while no one watched
(the server keeps a marker only as long as a lease).

The server marks the end of a lease given back (deleted once ``session.closed`` is out)
the same way, a lease time after the delete: a watcher that has seen the delete lets
that marker be. Taken for a lost worker, it was claimed, found closed and deleted
again, so that every session ever closed came back once a lease time, forever."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Coroutine
from typing import Any, Final, Self

from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js import JetStreamContext
from nats.js.api import DeliverPolicy
from nats.js.kv import KeyValue

from rawp_adapters._logging import get_logger
from rawp_adapters.remote._batches import frame_lines
from rawp_adapters.remote._closer import LOST, close_if_orphaned, close_orphan
from rawp_adapters.remote._link import Link
from rawp_adapters.remote._names import WORKER_LOST, Names
from rawp_adapters.remote._resume import replay

MARKER_REASON: Final = "Nats-Marker-Reason"
EXPIRED: Final = "MaxAge"
KV_OPERATION: Final = "KV-Operation"
GIVEN_BACK: Final = frozenset({"DEL", "PURGE"})

_log = get_logger("rawp_adapters.remote.leases")


class LeaseWatch:
    """While entered, closes the sessions whose lease expires (those ``accept`` takes)."""

    def __init__(
        self,
        link: Link,
        kv: KeyValue,
        names: Names,
        *,
        closer: str,
        accept: Callable[[str], bool] = lambda _: True,
        sweep: bool = False,
    ) -> None:
        """``sweep``: also close, once watching, every session already orphaned."""
        self._link = link
        self._kv = kv
        self._names = names
        self._closer = closer
        self._accept = accept
        self._sweep = sweep
        self._prefix = f"$KV.{names.lease_bucket}."
        self._sub: Subscription | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._given_back: set[str] = set()
        """Sessions whose lease was deleted and whose marker has not come yet."""

    async def __aenter__(self) -> Self:
        self._sub = await self._link.call(self._subscribe)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._link.call(self._stop)

    async def _subscribe(self) -> Subscription:
        sub = await self._link.js.subscribe(
            f"{self._prefix}>",
            stream=f"KV_{self._names.lease_bucket}",
            cb=self._on_change,
            ordered_consumer=True,
            deliver_policy=DeliverPolicy.NEW,
            headers_only=True,
            idle_heartbeat=1.0,
        )
        if self._sweep:  # after the watch starts: an expiry from now on is seen by it
            self._start(self._close_orphans())
        return sub

    async def _on_change(self, msg: Msg) -> None:
        session_id = msg.subject.removeprefix(self._prefix)
        if not self._accept(session_id):
            return
        headers = msg.headers or {}
        if headers.get(KV_OPERATION) in GIVEN_BACK:
            self._given_back.add(session_id)
        elif headers.get(MARKER_REASON) != EXPIRED:
            self._given_back.discard(session_id)  # a lease taken
        elif session_id in self._given_back:
            self._given_back.discard(session_id)  # the end of a lease given back
        else:
            self._start(self._close(session_id, msg.metadata.sequence.stream))

    def _start(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _close_orphans(self) -> None:
        js, names = self._link.js, self._names
        try:
            unclosed = await _unclosed_sessions(js, names)
        except Exception:
            _log.exception("listing the sessions not closed failed", closer=self._closer)
            return
        for session_id in unclosed:
            log = _log.bind(session_id=session_id, closer=self._closer)
            try:
                wrote = await close_if_orphaned(
                    js, self._kv, names, session_id, closer=self._closer
                )
            except Exception:
                log.exception("closing an orphaned session failed")
                continue
            if wrote:
                log.warning("lease gone while no one watched; closing frames written")

    async def _close(self, session_id: str, expired: int) -> None:
        log = _log.bind(session_id=session_id, closer=self._closer)
        try:
            wrote = await close_orphan(
                self._link.js,
                self._kv,
                self._names,
                session_id,
                expired,
                closer=self._closer,
                code=WORKER_LOST,
                message=LOST,
            )
        except Exception:
            log.exception("closing an orphaned session failed")
            return
        if wrote:
            log.warning("lease expired; closing frames written")

    async def _stop(self) -> None:
        if self._sub is not None:
            with contextlib.suppress(Exception):
                await self._sub.unsubscribe()
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=10)


async def _unclosed_sessions(js: JetStreamContext, names: Names) -> list[str]:
    """The sessions whose last stored message does not end with ``session.closed`` (one
    pass over the last message of each)."""
    prefix = names.frames_subject("")
    last_messages = replay(
        js, names.frames_stream, names.frames_subject("*"), None, last_per_subject=True
    )
    async with contextlib.aclosing(last_messages):
        return [m.subject.removeprefix(prefix) async for m in last_messages if not _closes(m.data)]


def _closes(data: bytes) -> bool:
    lines = frame_lines(data)
    try:
        return bool(lines) and json.loads(lines[-1]).get("type") == "session.closed"
    except ValueError:
        return False
