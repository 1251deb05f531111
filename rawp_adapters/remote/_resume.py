"""Reading a session's stored messages of frames: where a re-attached Master's reading
starts (the stream sequence of the message holding the first frame past the ``seq`` it
had, found by bisection over the frames stream: a few requests, however long the
stream), and a replay of them from there to the last one stored. Runs in nats-py's
loop."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator
from typing import Final

from nats.aio.msg import Msg
from nats.errors import TimeoutError as NatsTimeout
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, RawStreamMsg
from nats.js.errors import NotFoundError

from rawp_adapters.remote._batches import seq_range

_REPLAY_BATCH: Final = 256
_REPLAY_WAIT: Final = 1.0
_REPLAY_INACTIVE: Final = 30.0


async def start_after(
    js: JetStreamContext, stream: str, subject: str, seq: int, last: RawStreamMsg | None = None
) -> int | None:
    """The stream sequence to read ``subject`` from so that its first message holds the
    frame after ``seq`` (one past its last message when that holds ``seq``); ``None``
    when nothing can be skipped or a message does not say its ``seq`` range (then read
    it all). Frames up to ``seq`` in that first message are the reader's to skip.
    ``last``: the subject's last message, when the caller already has it."""
    if seq <= 0:
        return None
    if last is None:
        try:
            last = await js.get_last_msg(stream, subject)
        except NotFoundError:
            return None
    last_range = seq_range(last.headers)
    if last_range is None or last.seq is None:
        return None
    if last_range[1] <= seq:
        return last.seq + 1
    # The smallest stream sequence whose next message on the subject ends past `seq`:
    # messages are stored in `seq` order, so that test only turns from false to true once.
    low, high = 1, last.seq
    while low < high:
        middle = (low + high) // 2
        message = await js.get_msg(stream, seq=middle, subject=subject, next=True)
        found = seq_range(message.headers)
        if found is None or message.seq is None:
            return None
        if found[1] > seq:
            high = middle
        else:
            low = message.seq + 1  # nothing of the subject lies between middle and it
    return low


async def replay(
    js: JetStreamContext,
    stream: str,
    subject: str,
    start: int | None,
    *,
    last_per_subject: bool = False,
) -> AsyncGenerator[Msg, None]:
    """The subject's messages from stream sequence ``start`` (``None``: the first) to
    the last one stored when the replay began; with ``last_per_subject``, only the last
    message of each subject ``subject`` (a wildcard) matches."""
    if last_per_subject:
        deliver = DeliverPolicy.LAST_PER_SUBJECT
    else:
        deliver = DeliverPolicy.ALL if start is None else DeliverPolicy.BY_START_SEQUENCE
    sub = await js.pull_subscribe(
        subject,
        stream=stream,
        config=ConsumerConfig(
            ack_policy=AckPolicy.NONE,
            inactive_threshold=_REPLAY_INACTIVE,
            deliver_policy=deliver,
            opt_start_seq=start,
        ),
    )
    try:
        while True:
            try:
                messages = await sub.fetch(_REPLAY_BATCH, timeout=_REPLAY_WAIT)
            except NatsTimeout:
                return
            for message in messages:
                yield message
            if messages[-1].metadata.num_pending == 0:
                return
    finally:
        with contextlib.suppress(Exception):
            await sub.unsubscribe()
        with contextlib.suppress(Exception):  # else it lingers until inactive
            await js.delete_consumer(stream, sub._consumer)
