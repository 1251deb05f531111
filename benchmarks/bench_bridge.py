"""Throughput of the stdio bridge end to end: ``rawp-adapters serve --stdio`` between a
replayed agent and a reader of its stdout, against a bare reader in the same run.

Two streams: the mixed real omp replay of ``bench_process.py`` and a stream of nothing
but real omp text deltas (the common load while an agent writes).

Run: ``.venv/bin/python benchmarks/bench_bridge.py`` (``--help`` for options).
"""

from __future__ import annotations

import argparse
import json
import os
import select
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from statistics import median
from typing import NamedTuple

import psutil

from benchmarks._common import (
    MIB,
    Cell,
    agent_command,
    bridge_command,
    build_text_deltas,
    print_machine,
    print_table,
)
from benchmarks.bench_process import (
    READ_SIZE,
    bare_read,
    build_payload,
    pick_transcript,
)
from rawp_adapters import ControlFrames

TURN_END = b'"session.turn.end"'


def _first_frame(fd: int) -> tuple[dict[str, object], bytes]:
    """The bridge's first frame (``session.capabilities``), and what came after it, once
    the agent is ready (``agent.state.changed``)."""
    seen = b""
    while b'"agent.state.changed"' not in seen:
        select.select([fd], [], [], 30.0)
        chunk = os.read(fd, READ_SIZE)
        if not chunk:
            raise RuntimeError(f"the bridge ended before it was ready: {seen[:500]!r}")
        seen += chunk
    first, _, rest = seen.partition(b"\n")
    frame: dict[str, object] = json.loads(first)
    return frame, rest


class BridgeTurn(NamedTuple):
    elapsed: float
    frames: int
    cpu: float


def bridge_read(
    payload: Path,
    workspace: Path,
    decode: Callable[[bytes], object] | None,
    python: Sequence[str] = ("-m", "rawp_adapters.cli"),
) -> BridgeTurn:
    """Seconds from the prompt written to the bridge's stdin to its ``session.turn.end``
    read from its stdout, with ``payload`` replayed by the agent in between; the frame
    lines read; the bridge process's CPU seconds in between. The reader splits lines and,
    with ``decode``, decodes each. ``python``: how the interpreter runs the CLI (``-c
    SCRIPT`` that sets something up first)."""
    command = bridge_command(agent_command("replay", payload), workspace)
    command[1:3] = python
    with subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    ) as bridge:
        assert bridge.stdin is not None
        assert bridge.stdout is not None
        fd = bridge.stdout.fileno()
        capabilities, _ = _first_frame(fd)
        prompt = ControlFrames(str(capabilities["session_id"])).prompt("replay")
        process = psutil.Process(bridge.pid)
        cpu_before = sum(process.cpu_times()[:2])
        started = time.perf_counter()
        bridge.stdin.write(prompt.model_dump_json().encode() + b"\n")
        bridge.stdin.flush()
        frames, pending, done = 0, b"", False
        while not done and (chunk := os.read(fd, READ_SIZE)):
            parts = (pending + chunk).split(b"\n")
            pending = parts.pop()
            for part in parts:
                frames += 1
                if decode is not None:
                    decode(part)
                if TURN_END in part:
                    done = True
        elapsed = time.perf_counter() - started
        cpu = sum(process.cpu_times()[:2]) - cpu_before
        bridge.stdin.close()
        while os.read(fd, READ_SIZE):
            pass
        bridge.wait(30)
    if not done:
        raise RuntimeError("the bridge ended before the turn did")
    return BridgeTurn(elapsed, frames, cpu)


def bench_stream(name: str, payload: Path, lines: int, rounds: int, workspace: Path) -> None:
    """Rounds of (bare, bridge, bridge with json.loads) in turn; medians."""
    size = payload.stat().st_size
    bare: list[float] = []
    bridge: list[float] = []
    bridge_json: list[float] = []
    frames = 0
    for _ in range(rounds):
        bare.append(bare_read(payload, json.loads)[0])
        elapsed, frames, _ = bridge_read(payload, workspace, None)
        bridge.append(elapsed)
        bridge_json.append(bridge_read(payload, workspace, json.loads).elapsed)
    base = size / MIB / median(bare)
    rows: list[list[Cell]] = []
    for reader, runs, frame_count in (
        ("bare: split + json.loads (baseline)", bare, None),
        ("serve --stdio, reader splits frame lines", bridge, frames),
        ("serve --stdio, reader json.loads each frame", bridge_json, frames),
    ):
        elapsed = median(runs)
        rate = size / MIB / elapsed
        per_s = None if frame_count is None else frame_count / elapsed
        rows.append([reader, rate, lines / elapsed, per_s, f"{rate / base:.2f}x"])
    print_table(
        f"Bridge throughput, {name}: {size / MIB:.0f} MiB, {lines:,} agent lines of"
        f" {payload.name}, median of {rounds} rounds (issue 12: bridge/bare >= 1.5, aim 2.0)",
        ["reader", "MiB/s", "agent lines/s", "frames/s", "vs bare"],
        rows,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mib", type=int, default=64, help="mixed replay size (MiB)")
    parser.add_argument("--text-mib", type=int, default=32, help="text-delta stream size")
    parser.add_argument("--rounds", type=int, default=5, help="rounds per stream (median)")
    args = parser.parse_args()

    print_machine()
    mixed, mixed_lines = build_payload(pick_transcript(), args.mib)
    text, text_lines = build_text_deltas(args.text_mib)
    with tempfile.TemporaryDirectory(prefix="rawp-bench-") as tmp:
        workspace = Path(tmp)
        bench_stream("mixed omp replay", mixed, mixed_lines, args.rounds, workspace)
        bench_stream("omp text deltas only", text, text_lines, args.rounds, workspace)


if __name__ == "__main__":
    main()
