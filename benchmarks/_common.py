"""Shared bits of the benchmarks: paths, timing statistics and the printed tables.

Benchmarks print figures; they never assert. Every table has a baseline measured in
the same run, so ratios hold on any machine even when absolute figures do not.
"""

from __future__ import annotations

import json
import math
import os
import platform
import re
import signal
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

import psutil

REPO_ROOT = Path(__file__).resolve().parent.parent
CACHE_DIR = REPO_ROOT / ".cache" / "benchmarks"
FIXTURES = REPO_ROOT / "tests" / "fixtures" / "transcripts"
MIB = 1024 * 1024

Cell = str | int | float | None


def percentile(values: Sequence[float], fraction: float) -> float:
    """The value below which ``fraction`` of ``values`` lie (nearest rank)."""
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


def ratio(value: float, baseline: float) -> str:
    return f"{value / baseline:.2f}x" if baseline else "n/a"


def _cell(value: Cell) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:,.3f}" if abs(value) < 10 else f"{value:,.1f}"
    if isinstance(value, int):
        return f"{value:,}"
    return value


def print_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[Cell]]) -> None:
    """A plain-text table: the first column left-aligned, the others right-aligned."""
    text = [[_cell(value) for value in row] for row in rows]
    widths = [max(len(h), *(len(row[i]) for row in text)) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        first = cells[0].ljust(widths[0])
        rest = (cell.rjust(width) for cell, width in zip(cells[1:], widths[1:], strict=True))
        return "  ".join([first, *rest])

    print(f"\n{title}")
    print(line(headers))
    print("  ".join("-" * width for width in widths))
    for row in text:
        print(line(row))


def print_machine() -> None:
    cpus = psutil.cpu_count(logical=True)
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    print(
        f"python {platform.python_version()} on {platform.machine()}, {cpus} CPUs, {sys.platform}"
        f", load average {load} (other processes on these CPUs add noise)"
    )


AGENT = Path(__file__).with_name("_agent.py")
"""The scripted agent the benchmarks run (replay, banner, dialogs …; see its docstring)."""


def agent_command(mode: str, *args: object) -> list[str]:
    return [sys.executable, "-I", "-S", str(AGENT), mode, *map(str, args)]


def bridge_command(agent: list[str], workspace: Path) -> list[str]:
    """``rawp-adapters serve --stdio`` running ``agent`` with the process adapter."""
    settings = {"command": agent, "approval": "none"}
    return [
        sys.executable,
        "-m",
        "rawp_adapters.cli",
        "serve",
        "--stdio",
        "--adapter",
        "process",
        "--settings-json",
        json.dumps(settings),
        "--workspace",
        str(workspace),
    ]


def repeat_to_file(block: bytes, mib: int, name: str) -> tuple[Path, int]:
    """``block`` repeated to about ``mib`` MiB in a cached file named after ``name``;
    the file and how many times the block is in it."""
    repeats = max(1, mib * MIB // len(block))
    path = CACHE_DIR / f"{name}-x{repeats}.jsonl"
    if not path.exists() or path.stat().st_size != len(block) * repeats:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as out:
            for _ in range(repeats):
                out.write(block)
    return path, repeats


def build_text_deltas(mib: int) -> tuple[Path, int]:
    """Every ``text_delta`` line of the omp transcripts, repeated to about ``mib`` MiB
    (cached); its line count."""
    deltas = []
    for transcript in sorted(FIXTURES.glob("omp_*.stdout.jsonl")):
        for line in transcript.read_bytes().split(b"\n"):
            if not line.strip():
                continue
            event = json.loads(line)
            update = event.get("assistantMessageEvent") or {}
            if event.get("type") == "message_update" and update.get("type") == "text_delta":
                deltas.append(line)
    block = b"\n".join(deltas) + b"\n"
    path, repeats = repeat_to_file(block, mib, "omp-text-deltas")
    return path, len(deltas) * repeats


@contextmanager
def warm_server(
    where: Path, env: Mapping[str, str], start: Callable[[dict[str, str]], object]
) -> Iterator[tuple[dict[str, str], int]]:
    """The installation's warm server, its sockets in ``where`` (made here), started by
    ``start``: one ``--warm`` start in the environment given it, which also has the
    server import the adapter. Yields that environment and the server's pid; the
    server is told to stop (SIGTERM) at the end."""
    where.mkdir(mode=0o700)
    warm_env = {**env, "RAWP_ADAPTERS_WARM_DIR": str(where)}
    start(warm_env)
    (log,) = where.glob("*.log")
    (pid,) = re.findall(r"warm server (\d+): listening", log.read_text())
    try:
        yield warm_env, int(pid)
    finally:
        with suppress(ProcessLookupError):
            os.kill(int(pid), signal.SIGTERM)
