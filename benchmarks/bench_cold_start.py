"""Cold start of the stdio bridge: what ``rawp-adapters serve --stdio`` adds before its
``session.capabilities``, against the agent's own start measured in the same run.

- **agent alone (baseline)**: from spawning the trivial agent (``_agent.py idle``) to
  its first line (``ready``).
- **serve --stdio**: from spawning ``rawp-adapters serve --stdio --adapter process``
  with that agent as its command to the ``session.capabilities`` line on its stdout.
- **import rawp_adapters.cli**: from spawning the interpreter to the end of that
  import, beside a bare interpreter start (``python -c pass``), for reference.

Runs alternate (agent, bridge, import, interpreter) so the machine's drift hits each
alike; each figure is the median. **Target (issue 19): bridge minus agent < 100 ms.**

Run: ``.venv/bin/python benchmarks/bench_cold_start.py`` (``--help`` for options).
"""

from __future__ import annotations

import argparse
import json
import os
import select
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from statistics import median

from benchmarks._common import agent_command, print_machine, print_table

CLI = Path(sys.executable).with_name("rawp-adapters")
"""The console script a Master spawns (the venv's ``rawp-adapters``)."""

_WAIT_S = 30.0


def until_line(command: Sequence[str], marker: bytes) -> float:
    """Seconds from spawning ``command`` to the first line of its stdout that holds
    ``marker``; the process is then ended by closing its stdin."""
    started = time.perf_counter()
    with subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    ) as child:
        assert child.stdin is not None
        assert child.stdout is not None
        fd, pending = child.stdout.fileno(), b""
        while True:
            ready, _, _ = select.select([fd], [], [], _WAIT_S)
            chunk = os.read(fd, 65536) if ready else b""
            if not chunk:
                raise RuntimeError(f"{command[0]} ended before {marker!r}: {pending[:300]!r}")
            *lines, pending = (pending + chunk).split(b"\n")
            if any(marker in line for line in lines):
                break
        elapsed = time.perf_counter() - started
        child.stdin.close()
        child.wait(_WAIT_S)
    return elapsed


def until_exit(command: Sequence[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True, stdin=subprocess.DEVNULL)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="runs of each (median)")
    args = parser.parse_args()

    print_machine()
    agent = agent_command("idle")
    with tempfile.TemporaryDirectory(prefix="rawp-bench-") as workspace:
        bridge = [str(CLI), "serve", "--stdio", "--adapter", "process"]
        bridge += ["--settings-json", json.dumps({"command": agent, "approval": "none"})]
        bridge += ["--workspace", workspace]
        measured: dict[str, list[float]] = {"agent": [], "bridge": [], "import": [], "bare": []}
        until_line(bridge, b'"session.capabilities"')  # warm the page cache
        for _ in range(args.runs):
            measured["agent"].append(until_line(agent, b'"ready"'))
            measured["bridge"].append(until_line(bridge, b'"session.capabilities"'))
            measured["import"].append(
                until_exit([sys.executable, "-c", "import rawp_adapters.cli"])
            )
            measured["bare"].append(until_exit([sys.executable, "-c", "pass"]))
    ms = {name: median(runs) * 1000 for name, runs in measured.items()}
    print_table(
        f"Cold start, median of {args.runs} runs (issue 19: bridge - agent < 100 ms)",
        ["from spawn to", "ms", "added ms", "ratio"],
        [
            ["agent alone: its ready line (baseline)", ms["agent"], None, None],
            [
                "serve --stdio: session.capabilities",
                ms["bridge"],
                ms["bridge"] - ms["agent"],
                f"{ms['bridge'] / ms['agent']:.2f}x",
            ],
            ["python -c pass", ms["bare"], None, None],
            [
                "python -c 'import rawp_adapters.cli'",
                ms["import"],
                ms["import"] - ms["bare"],
                f"{ms['import'] / ms['bare']:.2f}x",
            ],
        ],
    )


if __name__ == "__main__":
    main()
