"""Benchmarks of the process adapter against real (fake) agent processes.

Prints four tables, each with a baseline measured in the same run:

1. throughput: a real omp transcript replayed at full speed, adapter vs bare readers;
2. added latency from the agent's write to the frame reaching the host, at a steady rate;
3. host memory per open idle session;
4. time to stop a well-behaved agent and one that ignores SIGTERM.

Run: ``.venv/bin/python benchmarks/bench_process.py`` (``--help`` for options).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import importlib
import json
import logging
import os
import pstats
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from statistics import median
from typing import Any

import anyio
import msgspec
import psutil
from rawp_adapter_process import ProcessAdapter, ProcessSettings
from rawp_adapter_process._wire import decode_line

from benchmarks._common import (
    FIXTURES,
    MIB,
    Cell,
    agent_command,
    build_text_deltas,
    percentile,
    print_machine,
    print_table,
    ratio,
    repeat_to_file,
)
from rawp_adapters import open_session
from rawp_adapters.frames import TextDeltaFrame, TurnEndFrame

READ_SIZE = 1 << 16
"""What one pipe read asks for, as anyio's process streams do."""
STREAM_EVENTS = frozenset(
    {
        "message_start",
        "message_update",
        "message_end",
        "turn_start",
        "turn_end",
        "tool_execution_start",
        "tool_execution_update",
        "tool_execution_end",
    }
)
"""What a turn streams; ready, answers, dialogs and agent_end are left out of the replay."""
BACKENDS = ("asyncio", "trio")

Decoder = Callable[[bytes], object]


def process_adapter(mode: str, *args: object, **settings: Any) -> ProcessAdapter:
    command = agent_command(mode, *args)
    return ProcessAdapter(ProcessSettings(command=command, approval="none", **settings))


# ----------------------------------------------------------------- the replayed stream


def pick_transcript() -> Path:
    """The omp transcript with the most ``message_update`` lines."""
    candidates = sorted(FIXTURES.glob("omp_*.stdout.jsonl"))
    return max(candidates, key=lambda path: path.read_bytes().count(b'"type":"message_update"'))


def build_payload(transcript: Path, mib: int) -> tuple[Path, int]:
    """The transcript's stream events repeated to about ``mib`` MiB (cached); its line count."""
    events = [
        line
        for line in transcript.read_bytes().split(b"\n")
        if line.strip() and json.loads(line).get("type") in STREAM_EVENTS
    ]
    block = b"\n".join(events) + b"\n"
    path, repeats = repeat_to_file(block, mib, transcript.name.split(".")[0])
    return path, len(events) * repeats


# ----------------------------------------------------------------- throughput


def bare_read(payload: Path, decode: Decoder) -> tuple[float, int]:
    """Seconds to read ``payload`` from a child's pipe, split lines and decode each."""
    with subprocess.Popen(
        agent_command("dump", payload), stdin=subprocess.PIPE, stdout=subprocess.PIPE
    ) as child:
        assert child.stdin is not None
        assert child.stdout is not None
        fd = child.stdout.fileno()
        child.stdin.write(b"go\n")
        child.stdin.flush()
        started = time.perf_counter()
        lines, pending = 0, b""
        while chunk := os.read(fd, READ_SIZE):
            parts = (pending + chunk).split(b"\n")
            pending = parts.pop()
            for part in parts:
                if part:
                    decode(part)
                    lines += 1
        elapsed = time.perf_counter() - started
    return elapsed, lines


async def adapter_read(payload: Path, workspace: Path) -> tuple[float, int]:
    """Seconds from the prompt to its turn end with ``payload`` streamed in between, and
    the frames the host got."""
    async with open_session(process_adapter("replay", payload), workspace=workspace) as session:
        prompt = session.control.prompt("replay")
        started = time.perf_counter()
        await session.send(prompt)
        frames = 0
        async for frame in session:
            frames += 1
            if isinstance(frame, TurnEndFrame):
                break
        elapsed = time.perf_counter() - started
    return elapsed, frames


def optional_decoder(module: str, attribute: str) -> Decoder | None:
    try:
        decoder: Decoder = getattr(importlib.import_module(module), attribute)
    except ImportError:
        return None
    return decoder


def best(runs: list[tuple[float, int]]) -> tuple[float, int]:
    return min(runs, key=lambda run: run[0])


def bench_throughput(payload: Path, lines: int, repeat: int, workspace: Path) -> None:
    size = payload.stat().st_size
    bare_readers: list[tuple[str, Decoder | None]] = [
        ("bare: split + json.loads (baseline)", json.loads),
        ("bare: split + orjson.loads", optional_decoder("orjson", "loads")),
        ("bare: split + msgspec.json.decode", msgspec.json.decode),
        ("bare: split + adapter's typed msgspec decode", decode_line),
    ]
    rows: list[list[Cell]] = []
    baseline = 0.0
    for name, decode in bare_readers:
        if decode is None:
            rows.append([name, None, None, None, None])
            continue
        elapsed, count = best([bare_read(payload, decode) for _ in range(repeat)])
        rate = size / MIB / elapsed
        baseline = baseline or rate
        rows.append([name, rate, count / elapsed, None, ratio(rate, baseline)])
    for backend in BACKENDS:
        runs = [anyio.run(adapter_read, payload, workspace, backend=backend) for _ in range(repeat)]
        elapsed, frames = best(runs)
        rate = size / MIB / elapsed
        name = f"ProcessAdapter + session ({backend})"
        rows.append([name, rate, lines / elapsed, frames / elapsed, ratio(rate, baseline)])
    print_table(
        f"Throughput: {size / MIB:.0f} MiB, {lines:,} lines of {payload.name}, best of {repeat}"
        " (issue 12: adapter/bare >= 2.0, aim 3.0)",
        ["reader", "MiB/s", "lines/s", "frames/s", "vs bare"],
        rows,
    )


def profile_adapter(payload: Path, workspace: Path) -> None:
    profiler = cProfile.Profile()
    profiler.enable()
    anyio.run(adapter_read, payload, workspace)
    profiler.disable()
    print("\ncProfile of one adapter run (asyncio), top 25 by own time:")
    pstats.Stats(profiler, stream=sys.stdout).sort_stats("tottime").print_stats(25)


# ----------------------------------------------------------------- latency


def bare_latency(rate: int, count: int) -> list[float]:
    """Microseconds from each paced delta's write to a bare reader's ``json.loads``."""
    samples: list[float] = []
    with subprocess.Popen(
        agent_command("paced", rate, count), stdin=subprocess.PIPE, stdout=subprocess.PIPE
    ) as child:
        assert child.stdin is not None
        assert child.stdout is not None
        child.stdin.write(b'{"id":"1","type":"prompt","message":"go"}\n')
        child.stdin.flush()
        fd = child.stdout.fileno()
        pending = b""
        while chunk := os.read(fd, READ_SIZE):
            parts = (pending + chunk).split(b"\n")
            pending = parts.pop()
            for part in parts:
                event = json.loads(part)
                if event["type"] == "message_update":
                    sent = int(event["assistantMessageEvent"]["delta"])
                    samples.append((time.monotonic_ns() - sent) / 1000)
                elif event["type"] == "agent_end":
                    child.stdin.close()
    return samples


async def adapter_latency(
    rate: int, count: int, workspace: Path, idle_sessions: int = 0
) -> list[float]:
    """Microseconds from each paced delta's write to its frame reaching the host, with
    ``idle_sessions`` other sessions open in the same host."""
    samples: list[float] = []
    async with AsyncExitStack() as others:
        for _ in range(idle_sessions):
            await others.enter_async_context(
                open_session(process_adapter("idle"), workspace=workspace)
            )
        adapter = process_adapter("paced", rate, count)
        async with open_session(adapter, workspace=workspace) as session:
            await session.send(session.control.prompt("go"))
            async for frame in session:
                if isinstance(frame, TextDeltaFrame):
                    samples.append((time.monotonic_ns() - int(frame.payload.text)) / 1000)
                elif isinstance(frame, TurnEndFrame):
                    break
    return samples


def bench_latency(
    rate: int, seconds: float, rounds: int, idle_sessions: int, workspace: Path
) -> None:
    """Each percentile is the median over ``rounds`` rounds of all readers taken in turn,
    so that one noisy moment of the machine does not decide the figure."""
    count = int(rate * seconds)
    names = ["bare: pipe + json.loads (baseline)"]
    names += [f"ProcessAdapter + session ({backend})" for backend in BACKENDS]
    names.append(f"ProcessAdapter (asyncio), {idle_sessions} idle sessions beside")
    figures: dict[str, list[tuple[float, float, float]]] = {name: [] for name in names}
    for _ in range(rounds):
        runs = [bare_latency(rate, count)]
        runs += [
            anyio.run(adapter_latency, rate, count, workspace, backend=backend)
            for backend in BACKENDS
        ]
        runs.append(anyio.run(adapter_latency, rate, count, workspace, idle_sessions))
        for name, samples in zip(names, runs, strict=True):
            stats = (percentile(samples, 0.5), percentile(samples, 0.99), max(samples))
            figures[name].append(stats)
    medians = {
        name: [median(column) for column in zip(*runs, strict=True)]
        for name, runs in figures.items()
    }
    base50, base99, _ = medians[names[0]]
    rows: list[list[Cell]] = [
        [name, p50, p99, worst, p50 - base50, p99 - base99]
        for name, (p50, p99, worst) in medians.items()
    ]
    print_table(
        f"Latency, agent write -> host, {rate:,} events/s for {seconds:g} s, microseconds,"
        f" median of {rounds} rounds (target added p99 < 1000)",
        ["reader", "p50", "p99", "max", "added p50", "added p99"],
        rows,
    )


# ----------------------------------------------------------------- memory


IDLE_WINDOW = 1.5
"""Seconds over which the host's CPU time with idle sessions is measured."""


def rss() -> int:
    gc.collect()
    return int(psutil.Process().memory_info().rss)


def cpu_seconds() -> float:
    times = psutil.Process().cpu_times()
    return float(times.user + times.system)


@dataclass(frozen=True, slots=True)
class HostCost:
    rss_per_session: float
    """Bytes."""
    idle_cpu: float
    """Percent of one CPU the host spends while every session is idle."""


async def adapter_memory(sessions: int, workspace: Path) -> tuple[HostCost, float]:
    """What open idle sessions cost the host, and the mean RSS of one agent (bytes)."""
    async with open_session(process_adapter("idle"), workspace=workspace):
        pass  # warm up: imports and the event loop's own resources
    before = rss()
    async with AsyncExitStack() as stack:
        for _ in range(sessions):
            await stack.enter_async_context(
                open_session(process_adapter("idle"), workspace=workspace)
            )
        after = rss()
        cpu = cpu_seconds()
        await anyio.sleep(IDLE_WINDOW)
        cpu = cpu_seconds() - cpu
        agents = psutil.Process().children()
        agent_rss = sum(agent.memory_info().rss for agent in agents) / len(agents)
    return HostCost((after - before) / sessions, 100 * cpu / IDLE_WINDOW), agent_rss


def bare_memory(sessions: int) -> HostCost:
    """What holding child processes with three pipes each, and nothing else, costs."""
    before = rss()
    children = [
        subprocess.Popen(
            agent_command("idle"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(sessions)
    ]
    after = rss()
    cpu = cpu_seconds()
    time.sleep(IDLE_WINDOW)
    cpu = cpu_seconds() - cpu
    for child in children:
        child.communicate()
    return HostCost((after - before) / sessions, 100 * cpu / IDLE_WINDOW)


def bench_memory(sessions: int, workspace: Path) -> None:
    bare = bare_memory(sessions)
    adapter, agent_rss = anyio.run(adapter_memory, sessions, workspace)
    added = adapter.rss_per_session - bare.rss_per_session
    print_table(
        f"Host cost of {sessions} open idle sessions: memory per session (MiB) and host CPU"
        " (% of one CPU) (target < 5 MiB per session beyond the agent)",
        ["host holds", "MiB/session", "added MiB", "idle CPU %", "agent RSS MiB"],
        [
            [
                "bare: children with three pipes (baseline)",
                bare.rss_per_session / MIB,
                None,
                bare.idle_cpu,
                None,
            ],
            [
                "ProcessAdapter + session",
                adapter.rss_per_session / MIB,
                added / MIB,
                adapter.idle_cpu,
                None,
            ],
            ["(for reference) one fake agent process", None, None, None, agent_rss / MIB],
        ],
    )


# ----------------------------------------------------------------- stopping


def bare_stop() -> float:
    """Seconds to stop a well-behaved child by closing its stdin and reaping it."""
    with subprocess.Popen(
        agent_command("idle"), stdin=subprocess.PIPE, stdout=subprocess.PIPE
    ) as child:
        assert child.stdin is not None
        assert child.stdout is not None
        child.stdout.readline()
        started = time.perf_counter()
        child.stdin.close()
        child.wait()
        return time.perf_counter() - started


async def adapter_stop(mode: str, workspace: Path, **settings: Any) -> float:
    """Seconds ``session.close()`` takes, from the call to ``session.closed``."""
    async with open_session(process_adapter(mode, **settings), workspace=workspace) as session:
        started = time.perf_counter()
        await session.close()
        return time.perf_counter() - started


def bench_stop(repeat: int, workspace: Path) -> None:
    defaults = ProcessSettings()
    bare = [bare_stop() for _ in range(repeat)]
    polite = [anyio.run(adapter_stop, "idle", workspace) for _ in range(repeat)]
    spec_grace = defaults.sigterm_grace
    stubborn_spec = anyio.run(partial(adapter_stop, "stubborn", workspace, stdin_close_grace=0.0))
    default_grace = defaults.stdin_close_grace + defaults.sigterm_grace
    stubborn_default = anyio.run(adapter_stop, "stubborn", workspace)
    ms = 1000.0
    rows: list[list[Cell]] = [
        ["bare: close stdin + wait (baseline)", median(bare) * ms, max(bare) * ms, 0.0, None],
        [
            "well-behaved agent (target < 200)",
            median(polite) * ms,
            max(polite) * ms,
            0.0,
            (median(polite) - median(bare)) * ms,
        ],
        [
            f"ignores SIGTERM, stdin grace 0 s, SIGTERM grace {spec_grace:g} s",
            stubborn_spec * ms,
            stubborn_spec * ms,
            spec_grace * ms,
            (stubborn_spec - spec_grace) * ms,
        ],
        [
            f"ignores SIGTERM, default settings ({defaults.stdin_close_grace:g} s"
            f" + {defaults.sigterm_grace:g} s)",
            stubborn_default * ms,
            stubborn_default * ms,
            default_grace * ms,
            (stubborn_default - default_grace) * ms,
        ],
    ]
    print_table(
        f"Time to stop an agent, milliseconds, {repeat} runs of the fast cases"
        " (target overhead < 200)",
        ["agent", "median", "max", "grace", "overhead"],
        rows,
    )


# ----------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mib", type=int, default=64, help="replayed stream size (MiB)")
    parser.add_argument("--text-mib", type=int, default=32, help="text-delta stream size")
    parser.add_argument("--transcript", type=Path, help="an omp/pi *.stdout.jsonl to replay")
    parser.add_argument("--repeat", type=int, default=3, help="runs per throughput reader")
    parser.add_argument("--rate", type=int, default=2000, help="events/s for the latency run")
    parser.add_argument("--seconds", type=float, default=1.5, help="length of a latency run")
    parser.add_argument("--rounds", type=int, default=3, help="latency rounds (median kept)")
    parser.add_argument("--sessions", type=int, default=40, help="sessions for the memory run")
    parser.add_argument("--profile", action="store_true", help="cProfile one adapter run")
    args = parser.parse_args()
    # The adapter's warnings (e.g. "agent ignored SIGTERM") are expected here.
    logging.getLogger("rawp_adapters").setLevel(logging.ERROR)

    print_machine()
    transcript = args.transcript or pick_transcript()
    payload, lines = build_payload(transcript, args.mib)
    text, text_lines = build_text_deltas(args.text_mib)
    with tempfile.TemporaryDirectory(prefix="rawp-bench-") as tmp:
        workspace = Path(tmp)
        bench_throughput(payload, lines, args.repeat, workspace)
        bench_throughput(text, text_lines, args.repeat, workspace)
        if args.profile:
            profile_adapter(payload, workspace)
        bench_latency(args.rate, args.seconds, args.rounds, args.sessions, workspace)
        bench_memory(args.sessions, workspace)
        bench_stop(5, workspace)


if __name__ == "__main__":
    main()
