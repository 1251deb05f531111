"""A 3-node JetStream cluster, streams and lease bucket on 3 replicas: a node killed
mid-turn or every node restarted in turn under load, and every session goes on with
every Master's stream whole (each ``seq`` once, none missing); a worker started while
the cluster cannot place its streams waits for it."""

from __future__ import annotations

import json
import signal
import urllib.request
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import anyio
import pytest

from rawp_adapters.frames import TextDeltaFrame, TurnEndFrame
from rawp_adapters.remote import Names, RemoteSessions
from rawp_adapters.testing import SessionDriver, check_frames
from tests.remote.cluster import (
    READY,
    NatsCluster,
    WorkerProcess,
    nats_cluster,
    running_worker,
)
from tests.remote.masters import driving
from tests.remote.test_wire import PACE, stored

pytestmark = pytest.mark.anyio

SESSIONS = 4
CHUNKS = 100
"""Text chunks of each turn, at :data:`HZ` a second: a turn streams for 1 s."""
HZ = 100


@pytest.fixture(scope="module")
def started_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsCluster]:
    """One cluster for the module: each test uses a prefix of its own (its own streams
    and bucket)."""
    with nats_cluster(tmp_path_factory.mktemp("cluster")) as started:
        yield started


@pytest.fixture
def cluster(started_cluster: NatsCluster) -> NatsCluster:
    """The module's cluster with every node running and healthy, whatever the test
    before stopped and did not restart (it failed first)."""
    started_cluster.heal()
    return started_cluster


@asynccontextmanager
async def busy_cluster(
    cluster: NatsCluster, prefix: str, workspace: Path
) -> AsyncIterator[tuple[WorkerProcess, list[list[SessionDriver]]]]:
    """A worker and two Masters on every node's URL; the first Master opens
    :data:`SESSIONS` sessions, the second attaches to each; both read every frame.
    Yields the worker and, per session, its two Masters' drivers."""
    url, replicas = cluster.url, str(NatsCluster.SIZE)
    async with AsyncExitStack() as stack:
        worker = await stack.enter_async_context(
            running_worker(url, prefix, "--allow-import-path", "--replicas", replicas)
        )
        first, second = [
            await stack.enter_async_context(
                await RemoteSessions.connect(url, prefix=prefix, replicas=NatsCluster.SIZE)
            )
            for _ in range(2)
        ]
        drivers: list[list[SessionDriver]] = []
        for _ in range(SESSIONS):
            session = await first.open(PACE, workspace=str(workspace))
            watching = await second.attach(session.session_id)
            drivers.append(
                [await stack.enter_async_context(driving(s)) for s in (session, watching)]
            )
        yield worker, drivers


@asynccontextmanager
async def under_load(drivers: list[list[SessionDriver]]) -> AsyncIterator[None]:
    """Every session runs turn after turn (each :data:`CHUNKS` chunks at :data:`HZ`)
    from before the body until after it; each turn ends ``end_turn``."""
    done = anyio.Event()

    async def turn_after_turn(opener: SessionDriver) -> None:
        while not done.is_set():
            turn = await opener.prompt(f"PACE {CHUNKS} {HZ}")
            assert turn.stop_reason == "end_turn"

    async with anyio.create_task_group() as tg:
        for opener, _ in drivers:
            tg.start_soon(turn_after_turn, opener)
        for pair in drivers:
            for driver in pair:
                await driver.wait_for(TextDeltaFrame)
        yield
        done.set()


async def a_turn_ends(drivers: list[list[SessionDriver]]) -> None:
    """Until every Master of every session has seen one more turn end."""
    for pair in drivers:
        for driver in pair:
            await driver.wait_for(TurnEndFrame, after=len(driver.frames))


async def end_sessions(drivers: list[list[SessionDriver]]) -> None:
    for opener, watcher in drivers:
        await opener.end()
        await watcher.closed()


def assert_whole(drivers: list[list[SessionDriver]]) -> None:
    """Each Master got ``seq`` 1, 2, … once each and each turn's every chunk; the two
    Masters of a session the same."""
    turn_text = "".join(f"{index} " for index in range(CHUNKS))
    for opener, watcher in drivers:
        for driver in (opener, watcher):
            assert [f.seq for f in driver.frames] == list(range(1, len(driver.frames) + 1))
            turns = len(driver.of_type(TurnEndFrame))
            assert "".join(f.payload.text for f in driver.of_type(TextDeltaFrame)) == (
                turn_text * turns
            )
            assert check_frames(driver.frames) == []
        assert [(f.seq, f.type) for f in opener.frames] == [(f.seq, f.type) for f in watcher.frames]


async def stored_seqs(url: str, prefix: str, session_id: str) -> list[int]:
    """The ``seq`` of every frame stored for the session, in stream order."""
    messages = await anyio.to_thread.run_sync(anyio.run, stored, url, Names(prefix), session_id)
    return [frame["seq"] for _, _, batch in messages for frame in batch]


async def assert_stored_once_each(
    cluster: NatsCluster, prefix: str, drivers: list[list[SessionDriver]]
) -> None:
    for opener, _ in drivers:
        seqs = await stored_seqs(cluster.url, prefix, opener.frames[0].session_id)
        assert seqs == list(range(1, len(opener.frames) + 1))


def frames_leader(cluster: NatsCluster, prefix: str) -> int:
    """The node that leads the frames stream's replicas (it orders every publish)."""
    for node in cluster.nodes:
        url = f"http://127.0.0.1:{node.monitor_port}/jsz?streams=true&accounts=true"
        with urllib.request.urlopen(url, timeout=5) as response:
            jsz = json.load(response)
        for account in jsz.get("account_details", []):
            for stream in account.get("stream_detail", []):
                if stream["name"] == Names(prefix).frames_stream:
                    leader = stream["cluster"]["leader"]
                    return int(leader.removeprefix("n"))
    raise LookupError("no node leads the frames stream")


def workers_server(cluster: NatsCluster, worker: WorkerProcess) -> int:
    """The node the worker is connected to (its connection's name holds its pid)."""
    for index, node in enumerate(cluster.nodes):
        url = f"http://127.0.0.1:{node.monitor_port}/connz"
        with urllib.request.urlopen(url, timeout=5) as response:
            names = [c.get("name", "") for c in json.load(response)["connections"]]
        if any(f"-{worker.pid}-" in name for name in names):
            return index
    raise LookupError("the worker is connected to no node")


@pytest.mark.parametrize("victim", ["the frames stream's leader", "the worker's server"])
async def test_a_node_killed_mid_turn_loses_no_frame_and_every_session_goes_on(
    cluster: NatsCluster, prefix: str, tmp_path: Path, victim: str
) -> None:
    async with busy_cluster(cluster, prefix, tmp_path) as (worker, drivers):
        async with under_load(drivers):
            if victim == "the worker's server":
                index = workers_server(cluster, worker)
            else:
                index = frames_leader(cluster, prefix)
            await anyio.to_thread.run_sync(cluster.nodes[index].stop, signal.SIGKILL)
            await a_turn_ends(drivers)
            await anyio.to_thread.run_sync(cluster.restart, index)
        await end_sessions(drivers)
    assert_whole(drivers)
    await assert_stored_once_each(cluster, prefix, drivers)


async def test_a_rolling_restart_of_every_node_under_load_loses_nothing(
    cluster: NatsCluster, prefix: str, tmp_path: Path
) -> None:
    async with busy_cluster(cluster, prefix, tmp_path) as (_, drivers):
        async with under_load(drivers):
            for index in range(NatsCluster.SIZE):
                await anyio.to_thread.run_sync(cluster.nodes[index].stop)
                await anyio.to_thread.run_sync(cluster.restart, index)
        await end_sessions(drivers)
    assert_whole(drivers)
    await assert_stored_once_each(cluster, prefix, drivers)


async def test_a_worker_started_while_the_cluster_has_no_quorum_waits_for_it_then_serves(
    cluster: NatsCluster, prefix: str, tmp_path: Path
) -> None:
    for index in (1, 2):  # one node of three: no meta leader, nothing placed on 3
        await anyio.to_thread.run_sync(cluster.nodes[index].stop, signal.SIGKILL)
    replicas = str(NatsCluster.SIZE)
    args = ("--allow-import-path", "--replicas", replicas)
    async with running_worker(cluster.url, prefix, *args, ready=False) as worker:
        await worker.wait_logged("the cluster cannot place the streams yet")
        await anyio.to_thread.run_sync(cluster.heal)
        await worker.wait_logged(READY)
        async with await RemoteSessions.connect(
            cluster.url, prefix=prefix, replicas=NatsCluster.SIZE
        ) as remote:
            session = await remote.open(PACE, workspace=str(tmp_path))
            async with driving(session) as d:
                turn = await d.prompt(f"PACE 3 {HZ}")
                await d.end()
    assert turn.stop_reason == "end_turn"
    assert check_frames(d.transcript) == []
