"""Memory ceilings: how much a host grows per session under hostile loads (issue 8).

Each load runs against one session, used as a user would (the ``serve --stdio`` bridge
as a subprocess, or ``open_session`` in this process), while a thread samples the host
process's RSS (psutil) every few milliseconds. The figure is the peak RSS during the
load minus the RSS just before it, printed beside its ceiling. The baseline row is the
same host through one ordinary turn, measured the same way.

1. a Master that sends bad lines to ``rawp-adapters serve --stdio`` and never reads
   its stdout (the bridge process's RSS);
2. an agent that writes junk lines before its ``ready`` (process adapter);
3. an agent that opens permission dialogs in one turn, none of them answered;
4. a Master that sends control frames of distinct unknown types.

Every load has a time limit (``--limit``): a bridge that stops reading (backpressure)
blocks the Master's writes, so the Master gives up at the limit and the table says how
much of the load got in. Nothing is extrapolated.

Run: ``.venv/bin/python benchmarks/bench_memory.py`` (``--help`` for options).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import logging
import os
import select
import subprocess
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import psutil
from rawp_adapter_process import ProcessAdapter, ProcessSettings

from benchmarks._common import MIB, Cell, agent_command, bridge_command, print_machine, print_table
from rawp_adapters import Session, open_session
from rawp_adapters.frames import TurnEndFrame

SAMPLE_EVERY = 0.005
"""Seconds between two RSS samples."""
CEILING = 16 * MIB
"""Growth a session may cost the host whatever the agent or the Master sends (the
same bound as the memory tests in tests/process/faults/test_memory.py)."""


def process_adapter(mode: str, *args: object) -> ProcessAdapter:
    return ProcessAdapter(ProcessSettings(command=agent_command(mode, *args), approval="none"))


class PeakRss:
    """Samples a process's RSS in a thread; ``growth`` is the peak since ``start`` minus
    the RSS at ``start``."""

    def __init__(self, pid: int) -> None:
        self._process = psutil.Process(pid)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self.before = 0
        self.peak = 0

    def _rss(self) -> int:
        return int(self._process.memory_info().rss)

    def _sample(self) -> None:
        while not self._stop.wait(SAMPLE_EVERY):
            try:
                self.peak = max(self.peak, self._rss())
            except psutil.Error:
                return

    def __enter__(self) -> PeakRss:
        gc.collect()
        self.before = self.peak = self._rss()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        with contextlib.suppress(psutil.Error):
            self.peak = max(self.peak, self._rss())

    @property
    def growth(self) -> int:
        return self.peak - self.before


@dataclass(frozen=True, slots=True)
class Measured:
    growth: int
    """Bytes: peak RSS during the load minus RSS before it."""
    done: str
    """How much of the load got in (and how long it took)."""


# ----------------------------------------------------------------- 1. the bridge


def _read_until(fd: int, marker: bytes, limit: float) -> bytes:
    """What the bridge writes until ``marker`` is in it (or ``limit`` seconds pass)."""
    seen = b""
    deadline = time.monotonic() + limit
    while marker not in seen and (left := deadline - time.monotonic()) > 0:
        if select.select([fd], [], [], left)[0]:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            seen += chunk
    return seen


def _write_for(fd: int, data: bytes, limit: float) -> int:
    """Writes ``data`` to a non-blocking ``fd`` until all of it is in or ``limit``
    seconds pass; the bytes written."""
    view = memoryview(data)
    written = 0
    deadline = time.monotonic() + limit
    while written < len(data) and (left := deadline - time.monotonic()) > 0:
        if select.select([], [fd], [], min(left, 0.1))[1]:
            try:
                written += os.write(fd, view[written : written + (1 << 16)])
            except BlockingIOError:
                continue
    return written


def bridge_load(workspace: Path, lines: list[bytes], limit: float, *, read: bool) -> Measured:
    """A bridge gets ``lines`` from a Master that reads only the first frames (or, with
    ``read``, every frame); growth of the bridge process."""
    with subprocess.Popen(
        bridge_command(agent_command("idle"), workspace),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    ) as bridge:
        assert bridge.stdin is not None
        assert bridge.stdout is not None
        out_fd, in_fd = bridge.stdout.fileno(), bridge.stdin.fileno()
        _read_until(out_fd, b'"agent.state.changed"', 30.0)
        time.sleep(0.3)  # the version probe and first tree scans settle
        drained = threading.Event()
        if read:

            def drain() -> None:
                while os.read(out_fd, 1 << 16):
                    pass
                drained.set()

            threading.Thread(target=drain, daemon=True).start()
        data = b"".join(lines)
        os.set_blocking(in_fd, False)
        with PeakRss(bridge.pid) as rss:
            started = time.monotonic()
            written = _write_for(in_fd, data, limit)
            elapsed = time.monotonic() - started
            time.sleep(0.5)  # what it took in is being handled
        sent = data[:written].count(b"\n")
        bridge.stdin.close()
        if not read:
            os.set_blocking(out_fd, True)
            while os.read(out_fd, 1 << 16):
                pass
        bridge.wait(30)
    return Measured(rss.growth, f"{sent:,}/{len(lines):,} lines in {elapsed:.1f} s")


# ----------------------------------------------------------------- 2-4. in this process


async def _one_turn(session: Session) -> int:
    """Prompt once and read frames until the turn ends (nothing answered); the frames."""
    await session.send(session.control.prompt("go"))
    frames = 0
    async for frame in session:
        frames += 1
        if isinstance(frame, TurnEndFrame):
            break
    return frames


async def in_process(
    adapter: ProcessAdapter, workspace: Path, load: Callable[[Session], Awaitable[str]]
) -> Measured:
    """The host's growth from before ``open_session`` to the end of ``load``."""
    async with open_session(process_adapter("idle"), workspace=workspace) as warm:
        await _one_turn(warm)  # imports, the loop's own resources
    with PeakRss(os.getpid()) as rss:
        started = time.monotonic()
        async with open_session(adapter, workspace=workspace) as session:
            done = await load(session)
        elapsed = time.monotonic() - started
    return Measured(rss.growth, f"{done} in {elapsed:.1f} s")


async def ordinary_turn(workspace: Path) -> Measured:
    async def load(session: Session) -> str:
        return f"{await _one_turn(session)} frames"

    return await in_process(process_adapter("idle"), workspace, load)


async def junk_before_ready(workspace: Path, count: int) -> Measured:
    async def load(session: Session) -> str:
        await _one_turn(session)
        return f"{count:,} lines, then a turn"

    return await in_process(process_adapter("banner", count), workspace, load)


async def dialog_flood(workspace: Path, count: int) -> Measured:
    async def load(session: Session) -> str:
        frames = await _one_turn(session)
        return f"{count:,} dialogs, {frames:,} frames"

    return await in_process(process_adapter("dialogs", count), workspace, load)


async def unknown_types(workspace: Path, count: int) -> Measured:
    async def load(session: Session) -> str:
        # The frames the Master would read come from a task beside the sender.
        template: dict[str, Any] = json.loads(session.control.end().model_dump_json())
        async with anyio.create_task_group() as tg:

            async def read() -> None:
                async for _ in session:
                    pass

            tg.start_soon(read)
            for n in range(count):
                frame = {**template, "type": f"x.vendor.unknown.{n:08d}", "payload": {}}
                await session.send_line(json.dumps(frame))
                if n % 1000 == 0:
                    await anyio.lowlevel.checkpoint()
            tg.cancel_scope.cancel()
        return f"{count:,} frames"

    return await in_process(process_adapter("idle"), workspace, load)


# ----------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bad-lines", type=int, default=200_000, help="load 1 (issue: 200k)")
    parser.add_argument("--junk", type=int, default=300_000, help="load 2 (issue: 300k)")
    parser.add_argument("--dialogs", type=int, default=50_000, help="load 3 (issue: 50k)")
    parser.add_argument("--unknown", type=int, default=100_000, help="load 4 (issue: 100k)")
    parser.add_argument("--limit", type=float, default=15.0, help="seconds a load may write")
    args = parser.parse_args()
    logging.getLogger("rawp_adapters").setLevel(logging.ERROR)
    logging.getLogger("rawp_adapter_process").setLevel(logging.ERROR)

    print_machine()
    bad = [f"not a frame {n:08d}\n".encode() for n in range(args.bad_lines)]
    with tempfile.TemporaryDirectory(prefix="rawp-bench-") as tmp:
        workspace = Path(tmp)
        one_bad = [b"{}\n"]
        rows: list[tuple[str, Measured, str]] = [
            (
                "baseline: bridge, Master reads, 1 bad line",
                bridge_load(workspace, one_bad, args.limit, read=True),
                "",
            ),
            (
                f"bridge: {args.bad_lines:,} bad lines, Master never reads",
                bridge_load(workspace, bad, args.limit, read=False),
                "+352 MB",
            ),
            ("baseline: API, one ordinary turn", anyio.run(ordinary_turn, workspace), ""),
            (
                f"API: {args.junk:,} junk lines before ready",
                anyio.run(junk_before_ready, workspace, args.junk),
                "+646 MB",
            ),
            (
                f"API: {args.dialogs:,} dialogs in one turn, none answered",
                anyio.run(dialog_flood, workspace, args.dialogs),
                "+390 MB",
            ),
            (
                f"API: {args.unknown:,} distinct unknown control types",
                anyio.run(unknown_types, workspace, args.unknown),
                "+108 MB",
            ),
        ]
    table: list[list[Cell]] = [
        [
            name,
            measured.growth / MIB,
            None if name.startswith("baseline") else CEILING / MIB,
            None if name.startswith("baseline") else f"{measured.growth / CEILING:.2f}",
            before or None,
            measured.done,
        ]
        for name, measured, before in rows
    ]
    print_table(
        "Host memory growth per session under hostile loads: peak RSS minus RSS before, MiB"
        f" (ceiling {CEILING / MIB:.0f} MiB; loads stop writing after {args.limit:g} s)",
        ["load", "growth MiB", "ceiling MiB", "of ceiling", "before bounds", "load done"],
        table,
    )


if __name__ == "__main__":
    main()
