"""The server side of it, set up once: the streams, the start consumer and the lease
bucket (every call here runs in nats-py's loop, through :meth:`Link.call`)."""

from __future__ import annotations

import contextlib
from typing import Final

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
from nats.js.errors import BucketNotFoundError, NotFoundError
from nats.js.kv import KeyValue

from rawp_adapters.remote._names import Names

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


async def ensure_streams(
    js: JetStreamContext, names: Names, lease_ttl: float, replicas: int = 1
) -> KeyValue:
    """Create what is missing (file storage throughout, each stream and the bucket on
    ``replicas`` servers of a cluster); what exists is used as it is, so the first
    worker's lease time holds for everyone. Returns the lease bucket."""
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
    except Exception:
        return await js.key_value(names.lease_bucket)


async def _stream(js: JetStreamContext, config: StreamConfig) -> None:
    assert config.name is not None
    try:
        await js.stream_info(config.name)
    except NotFoundError:
        with contextlib.suppress(Exception):  # made meanwhile by another party
            await js.add_stream(config)


async def lease_ttl(kv: KeyValue) -> float:
    """The bucket's lease time, as it was created."""
    ttl = (await kv.status()).ttl
    return float(ttl) if ttl else DEFAULT_LEASE_TTL
