"""A worker's server calls, each run in nats-py's loop through :meth:`Link.call`."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Mapping, Sequence
from typing import Final, Literal, Self

from nats.aio.msg import Msg
from nats.errors import Error as NatsError
from nats.errors import TimeoutError as NatsTimeout
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig
from nats.js.errors import (
    APIError,
    KeyDeletedError,
    KeyNotFoundError,
    KeyWrongLastSequenceError,
    NotFoundError,
    ServiceUnavailableError,
)
from nats.js.kv import KeyValue

from rawp_adapters._logging import get_logger
from rawp_adapters.frames import ClientFrame
from rawp_adapters.remote._batches import Batch, batches
from rawp_adapters.remote._link import RETRY_WAIT
from rawp_adapters.remote._names import EXPECTED_LAST, Names

PullSubscription = JetStreamContext.PullSubscription
_log = get_logger("rawp_adapters.remote.ops")

TAKE_WAIT: Final = 2.0
"""Seconds one fetch of the start queue or of a session's control frames waits."""
ACK_WAIT: Final = 5.0
"""Seconds a publish waits for the server's acknowledgement before it is tried again."""
WRONG_LAST_SEQUENCE: Final = 10071
"""JetStream's error code for a publish whose expected last sequence does not hold."""
CONTROL_INACTIVE: Final = 3600.0
"""Seconds after which the server removes a control consumer nobody reads (its worker
died and nobody closed the session)."""


async def start_subscription(js: JetStreamContext, names: Names) -> PullSubscription:
    return await js.pull_subscribe(
        names.start_subject, durable=names.start_consumer, stream=names.start_stream
    )


async def take_one(requests: PullSubscription) -> Msg | None:
    """The next start request, or None after :data:`TAKE_WAIT` (or a server hiccup)."""
    try:
        messages = await requests.fetch(1, timeout=TAKE_WAIT)
    except (TimeoutError, NatsTimeout):
        return None
    except NatsError:
        await asyncio.sleep(RETRY_WAIT)
        return None
    return messages[0] if messages else None


async def settle(
    message: Msg, how: Literal["ack", "nak", "term"], delay: float | None = None
) -> None:
    with contextlib.suppress(NatsError):
        if how == "ack":
            await message.ack()
        elif how == "nak":
            await message.nak(delay=delay)
        else:
            await message.term()


class Lease:
    """A session's key in the lease bucket, held by one worker: each renewal names the
    revision it replaces, so once another party has taken the key it fails."""

    def __init__(self, kv: KeyValue, session_id: str, worker_id: str, revision: int) -> None:
        self.kv = kv
        self.session_id = session_id
        self.value = json.dumps({"worker": worker_id}).encode()
        self.revision = revision

    async def renew(self) -> None:
        """Raises ``KeyWrongLastSequenceError`` when the lease is lost."""
        self.revision = await self.kv.update(self.session_id, self.value, last=self.revision)


async def lease_deleted(kv: KeyValue, session_id: str) -> bool:
    """Whether the session's lease is deleted or gone (not claimed by a closer, whose
    claim holds until it has written the closing frames)."""
    try:
        await kv.get(session_id)
    except (KeyDeletedError, KeyNotFoundError):
        return True
    return False


async def claim_lease(kv: KeyValue, session_id: str, worker_id: str) -> Lease | None:
    """The lease of a session not taken yet, or None."""
    lease = Lease(kv, session_id, worker_id, 0)
    try:
        lease.revision = await kv.create(session_id, lease.value)
    except KeyWrongLastSequenceError:
        return None
    return lease


async def release(
    js: JetStreamContext, kv: KeyValue, names: Names, session_id: str, revision: int
) -> None:
    """After ``session.closed`` is out: the lease, the control consumer and any control
    frame left unread go."""
    with contextlib.suppress(NatsError):
        await kv.delete(session_id, last=revision)
    with contextlib.suppress(NatsError):
        await js.delete_consumer(names.control_stream, names.control_consumer(session_id))
    with contextlib.suppress(NatsError):
        await js.purge_stream(names.control_stream, subject=names.control_subject(session_id))


class ControlFeed:
    """A session's control frames, from its worker's durable consumer: what a Master
    sends while the worker is cut off waits in the stream.

    The consumer keeps its state in the server's memory (``mem_storage``): one kept in a
    file rewrote that file at every acknowledgement, two thirds of the server's CPU with
    1,000 sessions streaming. Nothing is lost by it: the stream is a work queue, so what
    was acknowledged has left it and what was not is still there. A single server that
    restarts forgets the consumer (a cluster keeps it on its other nodes); the feed
    makes it again, and the new one delivers what was left."""

    _sub: PullSubscription

    def __init__(self, js: JetStreamContext, names: Names, session_id: str) -> None:
        self._js = js
        self._subject = names.control_subject(session_id)
        self._stream = names.control_stream
        self._durable = names.control_consumer(session_id)

    @classmethod
    async def open(cls, js: JetStreamContext, names: Names, session_id: str) -> Self:
        """The feed of the session's consumer, made if it is missing."""
        feed = cls(js, names, session_id)
        feed._sub = await feed._subscribe()
        return feed

    async def take(self) -> list[Msg]:
        """The next control frames, or none after :data:`TAKE_WAIT` (or a server hiccup)."""
        try:
            return await self._sub.fetch(64, timeout=TAKE_WAIT)
        except (TimeoutError, NatsTimeout):
            return []
        except ServiceUnavailableError:  # nothing answers: the consumer may be forgotten
            await self._make_again()
        except NatsError:
            await asyncio.sleep(RETRY_WAIT)
        return []

    async def _make_again(self) -> None:
        """The consumer made again if the server says it has none; else (or if making it
        fails) a pause before the next fetch."""
        try:
            await self._js.consumer_info(self._stream, self._durable)
        except NotFoundError:
            with contextlib.suppress(NatsError):
                forgotten, self._sub = self._sub, await self._subscribe()
                _log.warning("control consumer made again", consumer=self._durable)
                with contextlib.suppress(NatsError):
                    await forgotten.unsubscribe()
                return
        except NatsError:
            pass
        await asyncio.sleep(RETRY_WAIT)

    async def _subscribe(self) -> PullSubscription:
        config = ConsumerConfig(
            ack_policy=AckPolicy.EXPLICIT,
            inactive_threshold=CONTROL_INACTIVE,
            mem_storage=True,
        )
        return await self._js.pull_subscribe(
            self._subject, durable=self._durable, stream=self._stream, config=config
        )


async def ack_all(messages: Sequence[Msg]) -> None:
    for message in messages:
        with contextlib.suppress(NatsError):
            await message.ack()


class SessionTaken(Exception):
    """The server refused a message of frames because the session's subject has a
    message its writer did not publish: another party (the closer of an expired lease)
    has written there, so this writer must stop."""


async def append(
    js: JetStreamContext,
    subject: str,
    session_id: str,
    batch: Batch,
    after: int,
    give_up_after: float,
    trace: Mapping[str, str] | None = None,
) -> int:
    """Publish one message of frames on condition that the subject's last message is
    stream sequence ``after`` (``0``: none), and return its own sequence. A try without
    an acknowledgement is made again (the server drops it as a duplicate if it had it,
    and acknowledges it with its sequence) for ``give_up_after`` seconds; a refusal
    other than :class:`SessionTaken` (stream full, limits) is too, logged with its
    reason, since the frames are kept until it passes. ``trace`` (W3C ``traceparent``
    and ``tracestate``) goes with it as headers."""
    headers = {**(trace or {}), **batch.headers(session_id), EXPECTED_LAST: str(after)}
    loop = asyncio.get_running_loop()
    deadline = loop.time() + give_up_after
    while True:
        try:
            ack = await js.publish(subject, batch.data, timeout=ACK_WAIT, headers=headers)
            return int(ack.seq)
        except APIError as exc:
            if exc.err_code == WRONG_LAST_SEQUENCE:
                raise SessionTaken(subject) from exc
            _log.error("frames refused by the server", subject=subject, error=str(exc))
            if loop.time() > deadline:
                raise
        except (TimeoutError, NatsError):
            if loop.time() > deadline:
                raise
        await asyncio.sleep(RETRY_WAIT)


class Publisher:
    """Publishes one session's frames in ``seq`` order, as many to a message as fit
    (``specs/remote.md``, "Batches"), each message on condition that the one before it
    is the subject's last: one message in flight per session, the frames that come
    meanwhile making the next one. Raises :class:`SessionTaken` when another party has
    written to the session."""

    def __init__(
        self,
        js: JetStreamContext,
        names: Names,
        session_id: str,
        max_bytes: int,
        trace: Mapping[str, str],
    ) -> None:
        self._js = js
        self._session_id = session_id
        self._trace = trace
        self._subject = names.frames_subject(session_id)
        self._max_bytes = max_bytes
        self._after = 0

    async def publish(self, frames: Sequence[ClientFrame], give_up_after: float) -> None:
        for batch in batches(frames, self._max_bytes):
            self._after = await append(
                self._js,
                self._subject,
                self._session_id,
                batch,
                self._after,
                give_up_after,
                self._trace,
            )
