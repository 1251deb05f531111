"""Many idle sessions in one host: what each costs to open, to close and to hold.

N sessions of the process adapter (10, 100 and 1,000 by default) are opened at once in
one host process, held idle, then closed at once. The agent is ``_idle_agent.sh``, a
dash script that says ``ready`` and answers commands (~1 MiB), so that a thousand of
them fit the machine and the figures are the host's, not the agents'.

Every N runs in a fresh host process (a subprocess of this script), so that memory and
threads are counted from a clean start; each host first opens and closes one session
(imports, caches, the event loop's and the supervisor's one-time costs).

- **open s / close s**: from the first ``open_session`` call until every session is
  open; from the close signal until every session has closed.
- **MiB/session**: the host's RSS, plus the RSS of every helper process the host runs
  beyond the agents (parent-death guards, supervisors, ``--version`` probes), after
  minus before, divided by N.
- **threads/session**: the host's threads with the sessions open, minus before, over N.
- **growth**: the per-session figure at the largest N over the one at the smallest
  (1.00x is linear cost; 10x from 10 to 1,000 sessions would be quadratic).
- **300 sessions open + close**: the sum of both times for N = 300 (target < 5 s).

Run: ``.venv/bin/python benchmarks/bench_sessions.py`` (``--help`` for options).
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import psutil
from rawp_adapter_process import ProcessAdapter, ProcessSettings

from benchmarks._common import MIB, Cell, print_machine, print_table
from rawp_adapters import open_session

AGENT = Path(__file__).with_name("_idle_agent.sh")
SIZES = (10, 100, 1000)
TOTAL_SIZE = 300
"""The sessions of the "open + close" total (target: < 5 s)."""


def adapter() -> ProcessAdapter:
    return ProcessAdapter(ProcessSettings(command=[str(AGENT)], approval="none"))


def helpers_rss(host: psutil.Process) -> int:
    """The RSS of the host's descendants that are not agents (bytes)."""
    total = 0
    for proc in host.children(recursive=True):
        try:
            if str(AGENT) not in " ".join(proc.cmdline()):
                total += proc.memory_info().rss
        except psutil.Error:
            continue
    return total


def agents(host: psutil.Process) -> int:
    count = 0
    for proc in host.children(recursive=True):
        try:
            count += str(AGENT) in " ".join(proc.cmdline())
        except psutil.Error:
            continue
    return count


def sample(host: psutil.Process) -> tuple[int, int]:
    """The host's RSS plus its helpers' (bytes), and its threads."""
    gc.collect()
    return host.memory_info().rss + helpers_rss(host), host.num_threads()


async def measure(sessions: int, workspace: Path) -> dict[str, Any]:
    """Open ``sessions`` idle sessions at once, hold them, close them at once."""
    host = psutil.Process()
    async with open_session(adapter(), workspace=workspace):
        pass  # warm up
    rss_before, threads_before = sample(host)
    opened = 0
    all_open, release = anyio.Event(), anyio.Event()

    async def one() -> None:
        nonlocal opened
        async with open_session(adapter(), workspace=workspace):
            opened += 1
            if opened == sessions:
                all_open.set()
            await release.wait()

    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(sessions):
            tg.start_soon(one)
        await all_open.wait()
        open_s = time.perf_counter() - started
        rss_open, threads_open = sample(host)
        running = agents(host)
        closing = time.perf_counter()
        release.set()
    close_s = time.perf_counter() - closing
    return {
        "sessions": sessions,
        "open_s": open_s,
        "close_s": close_s,
        "mib_per_session": (rss_open - rss_before) / sessions / MIB,
        "threads_per_session": (threads_open - threads_before) / sessions,
        "agents": running,
        "left_after_close": agents(host),
    }


def run_host(sessions: int, backend: str) -> dict[str, Any]:
    """One measurement in a fresh host process."""
    argv = [sys.executable, __file__, "--host", str(sessions), "--backend", backend]
    out = subprocess.run(argv, check=True, stdout=subprocess.PIPE, text=True).stdout
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def growth(first: dict[str, Any], last: dict[str, Any], key: str) -> str:
    """The per-session ``key`` at the largest N over the smallest's."""
    if key in ("open_s", "close_s"):
        before, after = first[key] / first["sessions"], last[key] / last["sessions"]
    else:
        before, after = first[key], last[key]
    return f"{after / before:.2f}x" if before > 0 else "n/a"


def bench(sizes: list[int], backend: str) -> None:
    results = [run_host(n, backend) for n in sizes]
    rows: list[list[Cell]] = [
        [
            f"{r['sessions']:,} sessions",
            r["open_s"],
            r["close_s"],
            1000 * r["open_s"] / r["sessions"],
            1000 * r["close_s"] / r["sessions"],
            r["mib_per_session"],
            r["threads_per_session"],
            f"{r['agents']}/{r['left_after_close']}",
        ]
        for r in results
    ]
    if len(results) > 1:
        first, last = results[0], results[-1]
        rows.append(
            [
                f"growth per session, {last['sessions']:,} vs {first['sessions']:,}",
                None,
                None,
                growth(first, last, "open_s"),
                growth(first, last, "close_s"),
                growth(first, last, "mib_per_session"),
                growth(first, last, "threads_per_session"),
                None,
            ]
        )
    print_table(
        f"Idle sessions in one host ({backend}): open and close all at once"
        " (targets: linear growth, < 1 MiB per session)",
        [
            "host holds",
            "open s",
            "close s",
            "open ms/session",
            "close ms/session",
            "MiB/session",
            "threads/session",
            "agents open/left",
        ],
        rows,
    )
    total = run_host(TOTAL_SIZE, backend)
    print_table(
        f"{TOTAL_SIZE} sessions opened and closed ({backend}) (target: < 5 s in total)",
        ["run", "open s", "close s", "total s"],
        [
            [
                f"{TOTAL_SIZE} sessions",
                total["open_s"],
                total["close_s"],
                total["open_s"] + total["close_s"],
            ]
        ],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes",
        default=",".join(map(str, SIZES)),
        help="comma-separated session counts (default 10,100,1000)",
    )
    parser.add_argument("--backend", default="asyncio", choices=["asyncio", "trio", "both"])
    parser.add_argument("--host", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    logging.getLogger("rawp_adapters").setLevel(logging.ERROR)
    if args.host is not None:
        with tempfile.TemporaryDirectory(prefix="rawp-bench-") as tmp:
            result = anyio.run(measure, args.host, Path(tmp), backend=args.backend)
        print(json.dumps(result), flush=True)
        return
    print_machine()
    sizes = sorted(int(size) for size in args.sizes.split(","))
    for backend in ("asyncio", "trio") if args.backend == "both" else (args.backend,):
        bench(sizes, backend)


if __name__ == "__main__":
    main()
