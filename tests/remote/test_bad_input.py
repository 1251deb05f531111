"""Bad input and limits on the wire (``specs/remote.md``, "Limits"): each gets a clear
error, and nothing that was taken is lost."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import anyio
import nats
import pytest
from nats.errors import MaxPayloadError
from nats.js.api import DiscardPolicy
from nats.js.errors import APIError

from rawp_adapters.frames import SessionCapabilitiesFrame, SessionErrorFrame, TurnStartFrame
from rawp_adapters.remote import WORKER_LOST, Names, RemoteSessions
from rawp_adapters.remote._link import STORE_WITHIN
from rawp_adapters.remote._store import CONTROL_BACKLOG, ensure_streams
from rawp_adapters.testing import check_frames
from tests.remote.cluster import NatsServer, running_worker
from tests.remote.masters import driving
from tests.remote.test_wire import PACE, mid_turn

pytestmark = pytest.mark.anyio

LEASE = 2.0


async def _limit(url: str, names: Names, stream: str, limits: dict[str, object]) -> object:
    """The prefix's streams made as the library makes them, then ``stream``'s limits
    changed; returns its config."""
    client = await nats.connect(url)
    try:
        js = client.jetstream()
        await ensure_streams(js, names, LEASE)
        config = (await js.stream_info(stream)).config
        if limits:
            config = dataclasses.replace(config, **limits)  # type: ignore[arg-type]
            await js.update_stream(config)
        return config
    finally:
        await client.close()


async def limit(url: str, names: Names, stream: str, **limits: object) -> object:
    return await anyio.to_thread.run_sync(anyio.run, _limit, url, names, stream, limits)


async def _fill(url: str, stream: str) -> None:
    client = await nats.connect(url)
    try:
        js = client.jetstream()
        info = await js.stream_info(stream)
        full = dataclasses.replace(
            info.config, max_msgs=info.state.messages, discard=DiscardPolicy.NEW
        )
        await js.update_stream(full)
    finally:
        await client.close()


async def fill(url: str, stream: str) -> None:
    """``stream`` made full: it refuses any message past those it holds now."""
    await anyio.to_thread.run_sync(anyio.run, _fill, url, stream)


async def _publish(url: str, subject: str, data: bytes) -> None:
    client = await nats.connect(url)
    try:
        await client.jetstream().publish(subject, data)
    finally:
        await client.close()


async def test_a_message_that_is_no_frames_on_a_frames_subject_is_skipped_and_the_session_closes(
    nats: NatsServer, prefix: str, tmp_path: Path
) -> None:
    names = Names(prefix)
    async with mid_turn(nats.url, prefix, tmp_path, LEASE, "PACE 100000 100") as (
        worker,
        session,
        d,
    ):
        subject = names.frames_subject(session.session_id)
        garbage = b'not json\n[1, 2]\n{"type": "agent.text.delta"}\n'
        await anyio.to_thread.run_sync(anyio.run, _publish, nats.url, subject, garbage)
        await worker.wait_logged("session ended without its frames out")  # fenced off
        await d.closed()
    assert [f.seq for f in d.frames] == list(range(1, len(d.frames) + 1))
    assert check_frames(d.frames) == []
    errors = [f.payload.error_code for f in d.frames if f.type == "agent.error"]
    assert errors == [WORKER_LOST]


async def test_a_master_that_sends_faster_than_the_worker_reads_is_refused_past_the_backlog(
    nats: NatsServer, prefix: str, tmp_path: Path
) -> None:
    names = Names(prefix)
    default = await limit(nats.url, names, names.control_stream)
    assert (default.max_msgs_per_subject, default.discard) == (CONTROL_BACKLOG, DiscardPolicy.NEW)  # type: ignore[attr-defined]
    assert default.discard_new_per_subject  # type: ignore[attr-defined]
    await limit(nats.url, names, names.control_stream, max_msgs_per_subject=3)
    async with await RemoteSessions.connect(nats.url, prefix=prefix) as remote:
        session = await remote.open(PACE, workspace=str(tmp_path))  # no worker yet
        for line in (b"not json 1", b"not json 2", b"not json 3"):
            await session.send_line(line)
        # At once, not after the retries a cluster electing a leader gets (STORE_WITHIN).
        with (
            pytest.raises(APIError, match="maximum messages per subject exceeded"),
            anyio.fail_after(STORE_WITHIN / 3),
        ):
            await session.send_line(b"not json 4")
        async with running_worker(nats.url, prefix, "--allow-import-path"), driving(session) as d:
            for _ in range(3):
                await d.wait_for(SessionErrorFrame)
            await d.end()
    refused = [f.payload.message for f in d.of_type(SessionErrorFrame)]
    assert len(refused) == 3, "each frame that was kept reached the session, and only those"
    assert check_frames(d.frames) == []


async def test_a_control_frame_over_the_servers_max_payload_is_refused_and_the_session_goes_on(
    nats: NatsServer, prefix: str, tmp_path: Path
) -> None:
    async with (
        running_worker(nats.url, prefix, "--allow-import-path"),
        await RemoteSessions.connect(nats.url, prefix=prefix) as remote,
    ):
        session = await remote.open(PACE, workspace=str(tmp_path))
        async with driving(session) as d:
            # At once, not after the retries a lost server gets (STORE_WITHIN).
            with pytest.raises(MaxPayloadError), anyio.fail_after(STORE_WITHIN / 3):
                await session.send(session.control.prompt("x" * (2 << 20)))
            answer = await d.prompt("BURST 3")
            await d.end()
    assert answer.text == "0 1 2 "
    assert check_frames(d.frames) == []


async def test_frames_a_full_stream_refuses_are_kept_and_published_once_there_is_room(
    nats: NatsServer, prefix: str, tmp_path: Path
) -> None:
    names = Names(prefix)
    async with (
        running_worker(nats.url, prefix, "--allow-import-path") as worker,
        await RemoteSessions.connect(nats.url, prefix=prefix) as remote,
    ):
        session = await remote.open(PACE, workspace=str(tmp_path))
        async with driving(session) as d:
            # Full once the session's first frames are stored: the turn's frames, in
            # messages of their own, are refused however the worker batches them.
            await d.wait_for(SessionCapabilitiesFrame)
            await fill(nats.url, names.frames_stream)
            await session.send(session.control.prompt("BURST 200"))
            await worker.wait_logged("maximum messages exceeded")
            await limit(nats.url, names, names.frames_stream, max_msgs=-1)
            start = await d.wait_for(TurnStartFrame)
            answer = await d.wait_turn(start.payload.turn_id)
            await d.end()
    assert answer.text == "".join(f"{i} " for i in range(200))
    assert [f.seq for f in d.frames] == list(range(1, len(d.frames) + 1))
    assert check_frames(d.frames) == []
