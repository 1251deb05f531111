"""Where a re-attached Master starts reading: the server sends the message holding the
frame after the Master's last ``seq`` and those after it, not the session from its
first frame."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from nats import connect
from nats.js import JetStreamContext

from rawp_adapters.remote import Names
from rawp_adapters.remote._batches import Batch, seq_range
from rawp_adapters.remote._resume import start_after
from rawp_adapters.remote._store import ensure_streams
from tests.remote.cluster import NatsServer

pytestmark = pytest.mark.anyio

FRAMES = 300
BATCH = 3


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # nats-py runs on asyncio (the library bridges trio through a portal)


@pytest.fixture
async def streams(nats: NatsServer, prefix: str) -> AsyncIterator[tuple[JetStreamContext, Names]]:
    """A client's JetStream and the names of a prefix whose streams exist."""
    client = await connect(nats.url)
    try:
        js = client.jetstream()
        names = Names(prefix)
        await ensure_streams(js, names, 10.0)
        yield js, names
    finally:
        await client.close()


async def test_reading_resumes_at_the_message_holding_the_frame_after_the_last_seq_seen(
    streams: tuple[JetStreamContext, Names],
) -> None:
    js, names = streams
    stream, subject = names.frames_stream, names.frames_subject("mine")
    for first in range(1, FRAMES + 1, BATCH):
        last = first + BATCH - 1
        for session in ("mine", "other", "third"):
            headers = Batch(first, last, b"{}\n").headers(session)
            await js.publish(names.frames_subject(session), b"{}\n", headers=headers)
    for seen in (1, 2, 3, 57, 150, FRAMES - 1):
        start = await start_after(js, stream, subject, seen)
        assert start is not None
        message = await js.get_msg(stream, seq=start, subject=subject, next=True)
        assert seq_range(message.headers) == (seen - seen % BATCH + 1, seen - seen % BATCH + 3)
    assert await start_after(js, stream, subject, 0) is None, "nothing to skip"
    last_message = await js.get_last_msg(stream, subject)
    assert last_message.seq is not None
    assert await start_after(js, stream, subject, FRAMES) == last_message.seq + 1
    assert await start_after(js, stream, names.frames_subject("none"), 5) is None


async def test_a_message_that_does_not_say_its_seq_range_makes_the_reader_read_everything(
    streams: tuple[JetStreamContext, Names],
) -> None:
    js, names = streams
    subject = names.frames_subject("mine")
    await js.publish(subject, b"{}", headers=Batch(1, 1, b"{}").headers("mine"))
    await js.publish(subject, b"{}")  # published by hand, without its range
    assert await start_after(js, names.frames_stream, subject, 1) is None
