"""Sessions on worker processes behave as they do locally, and queue for free slots."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest
from anyio.abc import TaskStatus

from rawp_adapters import create_adapter
from rawp_adapters.frames import (
    AgentErrorFrame,
    ClientFrame,
    SessionCapabilitiesFrame,
    SessionClosedFrame,
)
from rawp_adapters.remote import START_REFUSED, RemoteSession, RemoteSessions
from rawp_adapters.testing import SessionDriver, check_frames, drive
from tests.remote.cluster import NatsServer, fake_agent, running_worker
from tests.remote.masters import WAIT, driving

pytestmark = pytest.mark.anyio

PROMPTS = ("Say hello.", "TOOL echo hi", "DIALOG select")


def shape(frames: Sequence[ClientFrame]) -> list[str]:
    """What a stream says, without its ids and timestamps."""
    return [frame.type for frame in frames]


async def test_a_session_on_a_worker_streams_what_a_local_session_does(
    nats: NatsServer, prefix: str, tmp_path: Path
) -> None:
    async with drive(create_adapter(fake_agent()), workspace=tmp_path) as local:
        for prompt in PROMPTS:
            await local.prompt(prompt)
        await local.end()
    async with (
        running_worker(nats.url, prefix),
        await RemoteSessions.connect(nats.url, prefix=prefix) as remote,
    ):
        session = await remote.open(fake_agent(), workspace=str(tmp_path))
        async with driving(session) as d:
            turns = [await d.prompt(prompt) for prompt in PROMPTS]
            await d.end()
    assert [turn.text for turn in turns] == ["echo: Say hello.", "allowed=True", '{"value": "red"}']
    assert shape(list(d.frames)) == shape(list(local.frames))
    assert [frame.seq for frame in d.frames] == list(range(1, len(d.frames) + 1))
    assert check_frames(d.transcript) == []


async def test_sessions_beyond_capacity_start_in_order_as_slots_free(
    nats: NatsServer, prefix: str, tmp_path: Path
) -> None:
    async with (
        running_worker(nats.url, prefix, "--max-sessions", "2"),
        await RemoteSessions.connect(nats.url, prefix=prefix) as remote,
        anyio.create_task_group() as tg,
    ):
        sessions = [await remote.open(fake_agent(), workspace=str(tmp_path)) for _ in range(5)]
        drivers = []
        for session in sessions:
            d = await tg.start(_driver, session)
            drivers.append(d)
        started = [await drivers[i].wait_for(SessionCapabilitiesFrame) for i in (0, 1)]
        for i in range(3):
            await drivers[i].end()
            started.append(await drivers[i + 2].wait_for(SessionCapabilitiesFrame))
        for d in drivers[3:]:
            await d.end()
        tg.cancel_scope.cancel()
    closed = [d.of_type(SessionClosedFrame)[0] for d in drivers]
    for i in range(3):  # each waiting session started once one before it had closed
        assert started[i + 2].timestamp >= closed[i].timestamp
    order = [frame.timestamp for frame in started[2:]]  # the first two start together
    assert order == sorted(order)


async def _driver(
    session: RemoteSession, *, task_status: TaskStatus[SessionDriver] = anyio.TASK_STATUS_IGNORED
) -> None:
    async with driving(session) as d:
        task_status.started(d)
        await anyio.sleep_forever()


async def test_a_request_a_worker_cannot_start_gets_closing_frames(
    nats: NatsServer, prefix: str
) -> None:
    async with (
        running_worker(nats.url, prefix),
        await RemoteSessions.connect(nats.url, prefix=prefix) as remote,
    ):
        session = await remote.open(fake_agent(), workspace="relative/is/refused")
        with anyio.fail_after(WAIT):
            frames = [frame async for frame in session]
    assert shape(frames) == ["agent.error", "session.closed"]
    assert isinstance(frames[0], AgentErrorFrame)
    assert frames[0].payload.error_code == START_REFUSED


async def test_an_adapter_limit_holds_back_sessions_of_that_type_only(
    nats: NatsServer, prefix: str, tmp_path: Path
) -> None:
    async with (
        running_worker(nats.url, prefix, "--max-sessions", "4", "--adapter-limit", "process=1"),
        await RemoteSessions.connect(nats.url, prefix=prefix) as remote,
        anyio.create_task_group() as tg,
    ):
        first = await tg.start(_driver, await remote.open(fake_agent(), workspace=str(tmp_path)))
        second = await tg.start(_driver, await remote.open(fake_agent(), workspace=str(tmp_path)))
        await first.wait_for(SessionCapabilitiesFrame)
        closed = await first.end()
        started = await second.wait_for(SessionCapabilitiesFrame)
        await second.end()
        tg.cancel_scope.cancel()
    assert started.timestamp >= closed.timestamp
