"""The wire of remote sessions (``specs/remote.md``): frames several to a message with
their ``seq`` range, a resume from any ``seq`` inside one, one consumer per Master
whatever it follows, and a worker fenced off its session once another party closed it."""

from __future__ import annotations

import json
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import nats
import pytest
from anyio.abc import TaskStatus

from rawp_adapters import AgentMetadata
from rawp_adapters.frames import SessionClosedFrame, TextDeltaFrame
from rawp_adapters.remote import WORKER_LOST, Names, RemoteSession, RemoteSessions
from rawp_adapters.remote._batches import frame_lines, seq_range
from rawp_adapters.testing import SessionDriver, check_frames, never_answer
from tests.remote.cluster import NatsServer, WorkerProcess, running_worker
from tests.remote.masters import WAIT, driving

pytestmark = pytest.mark.anyio

PACE = AgentMetadata(adapter_type="sdk", settings={"core": "tests.remote.pace_core:pace_core"})
LEASE = 2.0


@asynccontextmanager
async def burst_ended(
    url: str, prefix: str, workspace: Path, chunks: int
) -> AsyncIterator[tuple[RemoteSessions, RemoteSession, SessionDriver]]:
    """A worker and a Master whose session has streamed one turn of ``chunks`` chunks
    (``BURST``) and ended; yields the Master, the session and its driver."""
    async with (
        running_worker(url, prefix, "--allow-import-path"),
        await RemoteSessions.connect(url, prefix=prefix) as remote,
    ):
        session = await remote.open(PACE, workspace=str(workspace))
        async with driving(session) as d:
            await d.prompt(f"BURST {chunks}")
            await d.end()
        yield remote, session, d


@asynccontextmanager
async def mid_turn(
    url: str, prefix: str, workspace: Path, lease: float, prompt: str
) -> AsyncIterator[tuple[WorkerProcess, RemoteSession, SessionDriver]]:
    """A Master (leases of ``lease`` s) and a worker whose session is streaming the turn
    of ``prompt`` (its questions never answered): its first text has arrived. Yields
    the worker, the session and its driver."""
    async with (
        await RemoteSessions.connect(url, prefix=prefix, lease_ttl=lease) as remote,
        running_worker(url, prefix, "--allow-import-path") as worker,
    ):
        session = await remote.open(PACE, workspace=str(workspace))
        async with driving(session, never_answer) as d:
            await d.start_prompt(prompt)
            await d.wait_for(TextDeltaFrame)
            yield worker, session, d


Stored = list[tuple[int, int, list[dict[str, Any]]]]


async def stored(url: str, names: Names, session_id: str) -> Stored:
    """Every message of the session's frames as the server keeps it: its seq range from
    the headers and its frames."""
    client = await nats.connect(url.split(","))
    try:
        js = client.jetstream()
        messages: Stored = []
        seq = 1
        while True:
            try:
                message = await js.get_msg(
                    names.frames_stream,
                    seq=seq,
                    subject=names.frames_subject(session_id),
                    next=True,
                )
            except nats.js.errors.NotFoundError:
                return messages
            found = seq_range(message.headers)
            assert found is not None, message.headers
            frames = [json.loads(line) for line in frame_lines(message.data or b"")]
            messages.append((*found, frames))
            assert message.seq is not None
            seq = message.seq + 1
    finally:
        await client.close()


async def test_a_burst_of_frames_travels_several_to_a_message_with_each_seq_once(
    nats: NatsServer, prefix: str, tmp_path: Path
) -> None:
    async with burst_ended(nats.url, prefix, tmp_path, 3000) as (_, session, d):
        messages = await anyio.to_thread.run_sync(
            anyio.run, stored, nats.url, Names(prefix), session.session_id
        )
    frames = [frame for _, _, batch in messages for frame in batch]
    assert [frame["seq"] for frame in frames] == list(range(1, len(frames) + 1))
    assert [frame["seq"] for frame in frames] == [f.seq for f in d.frames]
    for first, last, batch in messages:
        assert [frame["seq"] for frame in batch] == list(range(first, last + 1))
    assert len(messages) < len(frames) / 10, "frames are batched"


async def test_a_master_attaching_from_any_seq_gets_exactly_the_frames_after_it(
    nats: NatsServer, prefix: str, tmp_path: Path
) -> None:
    async with burst_ended(nats.url, prefix, tmp_path, 2000) as (remote, session, d):
        last = d.frames[-1].seq
        for from_seq in (1, 2, 3, 17, 500, 1001, last - 2, last - 1):
            again = await remote.attach(session.session_id, from_seq=from_seq)
            with anyio.fail_after(WAIT):
                seqs = [frame.seq async for frame in again]
            assert seqs == list(range(from_seq + 1, last + 1)), from_seq


async def test_a_master_following_many_sessions_reads_them_with_one_consumer(
    nats: NatsServer, prefix: str, tmp_path: Path
) -> None:
    names = Names(prefix)
    async with (
        running_worker(nats.url, prefix, "--allow-import-path", "--max-sessions", "40"),
        await RemoteSessions.connect(nats.url, prefix=prefix) as remote,
    ):
        sessions = [await remote.open(PACE, workspace=str(tmp_path)) for _ in range(30)]
        async with anyio.create_task_group() as tg:
            drivers = [await tg.start(_prompted, session) for session in sessions]
        for session in sessions[:5]:  # read again from their start: a replay each
            await remote.attach(session.session_id, from_seq=1)
        consumers = await anyio.to_thread.run_sync(anyio.run, _consumers, nats.url, names)
    # One on every session's frames; a second for a moment when the ordered consumer
    # is made anew (a heartbeat missed on a loaded machine) until the server drops it.
    assert set(consumers) == {names.frames_subject("*")}, consumers
    assert len(consumers) <= 2, consumers
    for d in drivers:
        assert "".join(f.payload.text for f in d.of_type(TextDeltaFrame)).startswith("0 1 2 ")
        assert check_frames(d.frames) == []


async def _prompted(
    session: RemoteSession, *, task_status: TaskStatus[SessionDriver] = anyio.TASK_STATUS_IGNORED
) -> None:
    async with driving(session) as d:
        task_status.started(d)
        await d.prompt("BURST 50")
        await d.end()


async def _consumers(url: str, names: Names) -> list[str]:
    """The subjects the frames stream's consumers read."""
    client = await nats.connect(url)
    try:
        consumers = await client.jetstream().consumers_info(names.frames_stream)
        return [str(c.config.filter_subject) for c in consumers]
    finally:
        await client.close()


async def test_a_worker_cut_off_past_its_lease_writes_nothing_after_session_closed(
    nats: NatsServer, prefix: str, tmp_path: Path
) -> None:
    names = Names(prefix)
    async with mid_turn(nats.url, prefix, tmp_path, LEASE, "PACE 100000 200") as (
        cut_off,
        session,
        d,
    ):
        cut_off.process.send_signal(signal.SIGSTOP)
        try:
            closed = await d.wait_for(SessionClosedFrame, timeout=LEASE * 5)
        finally:
            cut_off.process.send_signal(signal.SIGCONT)
        await cut_off.wait_logged("session ended without its frames out")
        messages = await anyio.to_thread.run_sync(
            anyio.run, stored, nats.url, names, session.session_id
        )
    frames = [frame for _, _, batch in messages for frame in batch]
    assert frames[-1]["type"] == "session.closed", [f["type"] for f in frames[-3:]]
    assert [frame["seq"] for frame in frames] == list(range(1, len(frames) + 1))
    assert closed.payload.reason == "error"
    errors = [f for f in frames if f["type"] == "agent.error"]
    assert [e["payload"]["error_code"] for e in errors] == [WORKER_LOST]
