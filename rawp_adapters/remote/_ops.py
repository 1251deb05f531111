"""A worker's server calls, each run in nats-py's loop through :meth:`Link.call`."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Sequence
from typing import Final, Literal

from nats.aio.msg import Msg
from nats.errors import Error as NatsError
from nats.errors import TimeoutError as NatsTimeout
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, PubAck
from nats.js.errors import KeyWrongLastSequenceError
from nats.js.kv import KeyValue

from rawp_adapters._codec import encode_frames
from rawp_adapters.frames import ClientFrame
from rawp_adapters.remote._names import MSG_ID, Names

PullSubscription = JetStreamContext.PullSubscription

TAKE_WAIT: Final = 2.0
"""Seconds one fetch of the start queue waits for a request."""
ACK_WAIT: Final = 5.0
"""Seconds a publish waits for the server's acknowledgement before it is tried again."""
RETRY_WAIT: Final = 0.25
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


async def control_subscription(
    js: JetStreamContext, names: Names, session_id: str
) -> PullSubscription:
    """The session's durable control consumer: what a Master sends while the worker is
    cut off waits in it."""
    return await js.pull_subscribe(
        names.control_subject(session_id),
        durable=names.control_consumer(session_id),
        stream=names.control_stream,
        config=ConsumerConfig(ack_policy=AckPolicy.EXPLICIT, inactive_threshold=CONTROL_INACTIVE),
    )


async def take_control(control: PullSubscription) -> list[Msg]:
    try:
        return await control.fetch(64, timeout=TAKE_WAIT)
    except (TimeoutError, NatsTimeout):
        return []
    except NatsError:
        await asyncio.sleep(RETRY_WAIT)
        return []


async def ack_all(messages: Sequence[Msg]) -> None:
    for message in messages:
        with contextlib.suppress(NatsError):
            await message.ack()


class SessionTaken(Exception):
    """A frame published for the first time was a duplicate: another party (the closer
    of an expired lease) has written that ``seq``, so this worker must stop."""


class Publisher:
    """Publishes one session's frames in ``seq`` order, each with ``<session>:<seq>`` as
    its de-duplication id, a batch at a time; a batch not acknowledged in full is
    published again (what the server had is dropped as a duplicate). Raises
    :class:`SessionTaken` when a batch's first try meets a duplicate."""

    def __init__(self, js: JetStreamContext, names: Names, session_id: str) -> None:
        self._js = js
        self._subject = names.frames_subject(session_id)

    async def publish(self, frames: Sequence[ClientFrame], give_up_after: float) -> None:
        batch = [
            (encode_frames((frame,)), {MSG_ID: f"{frame.session_id}:{frame.seq}"})
            for frame in frames
        ]
        loop = asyncio.get_running_loop()
        deadline = loop.time() + give_up_after
        first_try = True
        while True:
            pending: list[asyncio.Future[PubAck]] = []
            try:
                for data, headers in batch:
                    pending.append(
                        await self._js.publish_async(self._subject, data, headers=headers)
                    )
                acks = await asyncio.wait_for(asyncio.gather(*pending), ACK_WAIT)
                if first_try and any(ack.duplicate for ack in acks):
                    raise SessionTaken(self._subject)
                return
            except (TimeoutError, NatsError):
                for future in pending:
                    future.cancel()
                if loop.time() > deadline:
                    raise
                first_try = False
                await asyncio.sleep(RETRY_WAIT)
