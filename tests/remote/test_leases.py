"""A lease that expires while no worker runs and no Master watches is closed by the
next worker that starts; a lease held by a live worker does not expire while its agent
is still starting; the lease of a session that closed is let be once given back, and a
live session whose lease someone deletes is closed by its worker."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from rawp_adapters.frames import AgentErrorFrame, InteractionRequestFrame
from rawp_adapters.remote import WORKER_LOST, RemoteSession, RemoteSessions
from rawp_adapters.testing import SessionDriver, check_frames, never_answer
from tests.remote.cluster import (
    RPC_AGENT,
    NatsServer,
    WorkerProcess,
    delete_lease,
    fake_agent,
    lease_expired,
    lease_watched,
    running_worker,
)
from tests.remote.masters import WAIT, driving

pytestmark = pytest.mark.anyio

LEASE = 2.0


async def test_a_lease_that_expired_with_no_worker_alive_is_closed_by_the_next_worker_to_start(
    nats: NatsServer, prefix: str, tmp_path: Path
) -> None:
    async with (
        await RemoteSessions.connect(nats.url, prefix=prefix, lease_ttl=LEASE) as remote,
        running_worker(nats.url, prefix),  # SIGKILLed on exit, before the Master leaves
    ):
        session = await remote.open(fake_agent(), workspace=str(tmp_path))
        async with driving(session, never_answer) as d:
            await d.start_prompt("TOOL echo hi")
            await d.wait_for(InteractionRequestFrame)
    # No worker runs and no Master watches: nobody sees the lease expire.
    await lease_expired(nats.url, prefix, session.session_id)
    async with running_worker(nats.url, prefix) as next_worker:
        await next_worker.wait_logged("closing frames written")
    async with await RemoteSessions.connect(nats.url, prefix=prefix) as later:
        again = await later.attach(session.session_id)
        with anyio.fail_after(WAIT):
            frames = [frame async for frame in again]
    assert next_worker.logged("lease gone while no one watched")
    assert [f.type for f in frames[-4:]] == [
        "agent.error",
        "agent.interaction.resolved",
        "session.turn.end",
        "session.closed",
    ]
    error = frames[-4]
    assert isinstance(error, AgentErrorFrame)
    assert error.payload.error_code == WORKER_LOST
    assert [f.seq for f in frames] == list(range(1, len(frames) + 1))
    assert check_frames(frames) == []


async def test_an_agent_slower_to_start_than_the_lease_lasts_keeps_its_session(
    nats: NatsServer, prefix: str, tmp_path: Path
) -> None:
    # the fake agent starts only after three times the lease's TTL (a real agent's cold
    # start on a loaded host can take that long)
    late = f'sleep {3 * LEASE}; exec "$0" -I -S "$1"'
    slow = fake_agent(command=["sh", "-c", late, sys.executable, str(RPC_AGENT)])
    async with (
        await RemoteSessions.connect(nats.url, prefix=prefix, lease_ttl=LEASE) as remote,
        running_worker(nats.url, prefix) as worker,
    ):
        session = await remote.open(slow, workspace=str(tmp_path))
        async with driving(session) as d:
            turn = await d.prompt("Say hello.")
            await d.end()
    assert turn.stop_reason == "end_turn"
    assert not worker.logged("lease expired")
    assert [f for f in d.transcript if isinstance(f, AgentErrorFrame)] == []
    assert check_frames(d.transcript) == []


@asynccontextmanager
async def after_a_turn(
    nats: NatsServer, prefix: str, workspace: Path
) -> AsyncIterator[tuple[RemoteSession, SessionDriver, WorkerProcess]]:
    """A session on a worker, leases lasting :data:`LEASE`, that has answered a prompt;
    the driver still reading it."""
    async with (
        await RemoteSessions.connect(nats.url, prefix=prefix, lease_ttl=LEASE) as remote,
        running_worker(nats.url, prefix) as worker,
    ):
        session = await remote.open(fake_agent(), workspace=str(workspace))
        async with driving(session) as d:
            await d.prompt("Say hello.")
            yield session, d, worker


async def test_the_lease_of_a_session_that_closed_is_written_no_more_once_it_runs_out(
    nats: NatsServer, prefix: str, tmp_path: Path
) -> None:
    # The server marks a lease given back as it marks one whose worker died, a lease
    # time after the delete; the watchers (the worker and the Master) once took that
    # marker for a lost worker, claimed the lease, found the session closed and deleted
    # it again: every session ever closed came back every lease time.
    # watched from before the end: the marker comes a lease time after the delete,
    # sooner than a watch started later on a loaded host
    async with (
        after_a_turn(nats, prefix, tmp_path) as (session, d, worker),
        lease_watched(nats.url, prefix, session.session_id, after_marker=LEASE) as writes,
    ):
        await d.end()
    assert writes[-2:] == ["DEL", "MaxAge"], writes
    assert not worker.logged("closing frames written")


async def test_a_live_session_whose_lease_is_deleted_by_hand_is_closed_by_its_worker(
    nats: NatsServer, prefix: str, tmp_path: Path
) -> None:
    # The server's marker of a delete is let be (the test above), so no watcher closes
    # such a session: its worker, refused its next renewal, finds the key deleted rather
    # than claimed and closes the session itself.
    async with after_a_turn(nats, prefix, tmp_path) as (session, d, worker):
        await delete_lease(nats.url, prefix, session.session_id)
        await d.closed()
        # its log line comes over another pipe than the frames: waited for, not raced
        await worker.wait_logged("lease deleted; the session is closed")
    assert [f.seq for f in d.frames] == list(range(1, len(d.frames) + 1))
    assert check_frames(d.transcript) == []
