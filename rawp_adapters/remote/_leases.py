"""Watching the lease bucket: when a session's lease expires (the server's ``MaxAge``
delete marker), its worker is gone, and the watcher writes its closing frames. Every
worker watches every lease; a Master's library watches those of its own sessions."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Final, Self

from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js.api import DeliverPolicy
from nats.js.kv import KeyValue

from rawp_adapters._logging import get_logger
from rawp_adapters.remote._closer import LOST, close_orphan
from rawp_adapters.remote._link import Link
from rawp_adapters.remote._names import WORKER_LOST, Names

MARKER_REASON: Final = "Nats-Marker-Reason"
EXPIRED: Final = "MaxAge"

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
    ) -> None:
        self._link = link
        self._kv = kv
        self._names = names
        self._closer = closer
        self._accept = accept
        self._prefix = f"$KV.{names.lease_bucket}."
        self._sub: Subscription | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> Self:
        self._sub = await self._link.call(self._subscribe)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._link.call(self._stop)

    async def _subscribe(self) -> Subscription:
        return await self._link.js.subscribe(
            f"{self._prefix}>",
            stream=f"KV_{self._names.lease_bucket}",
            cb=self._on_change,
            ordered_consumer=True,
            deliver_policy=DeliverPolicy.NEW,
            headers_only=True,
            idle_heartbeat=1.0,
        )

    async def _on_change(self, msg: Msg) -> None:
        if (msg.headers or {}).get(MARKER_REASON) != EXPIRED:
            return
        session_id = msg.subject.removeprefix(self._prefix)
        if not self._accept(session_id):
            return
        expired = msg.metadata.sequence.stream
        task = asyncio.get_running_loop().create_task(self._close(session_id, expired))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

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
