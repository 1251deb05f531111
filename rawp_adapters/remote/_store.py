"""The server side of it, set up once: the streams, the start consumer and the lease
bucket (every call here runs in nats-py's loop, through :meth:`Link.call`)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Final

from nats.errors import TimeoutError as NatsTimeoutError
from nats.js import JetStreamContext
from nats.js.api import (
    AckPolicy,
    ConsumerConfig,
    DiscardPolicy,
    KeyValueConfig,
    RetentionPolicy,
    StorageType,
    StreamConfig,
)
from nats.js.errors import APIError, BucketNotFoundError, NotFoundError
from nats.js.kv import KeyValue

from rawp_adapters._logging import get_logger
from rawp_adapters.remote._link import RETRY_WAIT, STORE_WITHIN
from rawp_adapters.remote._names import Names

_log = get_logger("rawp_adapters.remote.store")

DEFAULT_LEASE_TTL: Final = 10.0
"""Seconds a session's lease lives without being renewed (its worker renews it three
times as often)."""
DUPLICATE_WINDOW: Final = 120.0
"""Seconds within which a frame published again (same ``Nats-Msg-Id``) is dropped."""
START_ACK_WAIT: Final = 30.0
"""Seconds a start request taken by a worker that died waits before another gets it."""
FRAMES_MAX_AGE: Final = 7 * 24 * 3600.0
"""Seconds a session's frames stay replayable."""
CONTROL_BACKLOG: Final = 10_000
"""Control frames of one session the server keeps unread; past them a Master's publish
is refused (``maximum messages per subject exceeded``) and what was kept stays."""
MAX_CONSUMERS: Final = 1_000_000
"""Consumers on the frames and control streams: one per session and reader (nats-server
2.15 limits a stream to 1,000 unless it names its own limit)."""
NOT_YET: Final = frozenset({10005, 10008})
"""JetStream's error codes for a stream or bucket it cannot place on ``replicas``
servers now (one is offline, or just back and not yet counted online) and for a cluster
that has no meta leader yet."""
NAME_IN_USE: Final = 10058
"""JetStream's error code for a stream made meanwhile by another party."""


async def ensure_streams(
    js: JetStreamContext,
    names: Names,
    lease_ttl: float,
    replicas: int = 1,
    within: float = STORE_WITHIN,
) -> KeyValue:
    """Create what is missing (file storage throughout, each stream and the bucket on
    ``replicas`` servers of a cluster); what exists is used as it is, so the first
    worker's lease time holds for everyone. Returns the lease bucket. What the cluster
    cannot place yet, or does not answer (a leader being elected), is tried again for
    ``within`` seconds: a worker started while a node restarts waits for it, instead of
    exiting or going on without a stream."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    waiting = False
    while True:
        try:
            return await _ensure(js, names, lease_ttl, replicas)
        except (APIError, NatsTimeoutError) as exc:
            placing = isinstance(exc, NatsTimeoutError) or exc.err_code in NOT_YET
            if not placing or loop.time() > deadline:
                raise
            if not waiting:
                waiting = True
                _log.warning(
                    "the cluster cannot place the streams yet; trying again",
                    reason=str(exc),
                    within=within,
                )
        await asyncio.sleep(RETRY_WAIT)


async def _ensure(js: JetStreamContext, names: Names, lease_ttl: float, replicas: int) -> KeyValue:
    await _stream(
        js,
        StreamConfig(
            name=names.start_stream,
            subjects=[names.start_subject],
            retention=RetentionPolicy.WORK_QUEUE,
            storage=StorageType.FILE,
            num_replicas=replicas,
            duplicate_window=DUPLICATE_WINDOW,
        ),
    )
    await _stream(
        js,
        StreamConfig(
            name=names.frames_stream,
            subjects=[names.frames_subject("*")],
            storage=StorageType.FILE,
            num_replicas=replicas,
            duplicate_window=DUPLICATE_WINDOW,
            max_age=FRAMES_MAX_AGE,
            max_consumers=MAX_CONSUMERS,
        ),
    )
    await _stream(
        js,
        StreamConfig(
            name=names.control_stream,
            subjects=[names.control_subject("*")],
            retention=RetentionPolicy.WORK_QUEUE,
            storage=StorageType.FILE,
            num_replicas=replicas,
            duplicate_window=DUPLICATE_WINDOW,
            max_age=FRAMES_MAX_AGE,
            max_consumers=MAX_CONSUMERS,
            max_msgs_per_subject=CONTROL_BACKLOG,
            discard=DiscardPolicy.NEW,
            discard_new_per_subject=True,
        ),
    )
    with contextlib.suppress(Exception):  # another worker made it first
        await js.add_consumer(
            names.start_stream,
            ConsumerConfig(
                durable_name=names.start_consumer,
                ack_policy=AckPolicy.EXPLICIT,
                ack_wait=START_ACK_WAIT,
                max_ack_pending=-1,
            ),
        )
    with contextlib.suppress(BucketNotFoundError):
        return await js.key_value(names.lease_bucket)
    try:
        return await js.create_key_value(
            KeyValueConfig(
                bucket=names.lease_bucket,
                history=1,
                ttl=lease_ttl,
                limit_marker_ttl=max(1.0, lease_ttl),
                storage=StorageType.FILE,
                replicas=replicas,
            )
        )
    except APIError as exc:
        if exc.err_code in NOT_YET:
            raise
        return await js.key_value(names.lease_bucket)  # made meanwhile by another party


async def _stream(js: JetStreamContext, config: StreamConfig) -> None:
    assert config.name is not None
    try:
        await js.stream_info(config.name)
    except NotFoundError:
        try:
            await js.add_stream(config)
        except APIError as exc:
            if exc.err_code != NAME_IN_USE:
                raise


async def lease_ttl(kv: KeyValue) -> float:
    """The bucket's lease time, as it was created."""
    ttl = (await kv.status()).ttl
    return float(ttl) if ttl else DEFAULT_LEASE_TTL
