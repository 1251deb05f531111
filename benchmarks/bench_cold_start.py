"""Cold start of the stdio bridge: what ``rawp-adapters serve --stdio`` adds before its
``session.capabilities``, against the agent's own start measured in the same run.

- **agent alone (baseline)**: from spawning the trivial agent (``_agent.py idle``) to
  its first line (``ready``).
- **serve --stdio**: from spawning ``rawp-adapters serve --stdio --adapter process``
  with that agent as its command to the ``session.capabilities`` line on its stdout.
- **serve --stdio --warm**: the same command with ``--warm``, as a Master spawns it per
  session once the installation's warm server is up (the first ``--warm`` start, made
  before the runs, starts it): the launcher hands its stdio to a process the server
  forks. The CPU figure is the launcher's and that session process's.
- **serve --listen**: from connecting to a resident ``rawp-adapters serve --listen
  PATH`` (the same adapter and agent, started once before the runs) to the
  ``session.capabilities`` line on that connection: what a Master that keeps one
  bridge up pays per session (the CPU figure is the server's own).
- **import rawp_adapters.cli**: from spawning the interpreter to the end of that
  import, beside a bare interpreter start (``python -c pass``), for reference.
- **the libraries alone**: from spawning the interpreter to its first line once it has
  imported and started what every bridge does, whatever its own code: pydantic with
  one model built (which loads pydantic's plugins through ``importlib.metadata``),
  asyncio run through anyio, psutil and msgspec: the floor under what a fresh
  ``serve --stdio`` adds, against the same baseline.

Every process runs with up-to-date bytecode, as an installed package has it (pip
compiles it): ``PYTHONDONTWRITEBYTECODE`` is dropped from their environment, so the
warm-up writes the bytecode of the modules edited since it was last written; with it,
each start would compile those again (about half a millisecond per 100 lines).
Runs alternate (agent, bridge, warm, listen, import, libraries, interpreter) so the
machine's drift hits each alike; each figure is the median. **Target (issue 19):
bridge minus agent < 100 ms**, met by ``serve --stdio --warm`` and ``serve --listen``;
a fresh ``serve --stdio`` pays an interpreter and its imports on top.
Beside each time, the CPU the process itself used until then (its children's aside):
on a machine where other work shares the CPUs it moves far less than the time does.

Run: ``.venv/bin/python benchmarks/bench_cold_start.py`` (``--help`` for options).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import select
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from statistics import median

import psutil

from benchmarks._common import Cell, agent_command, print_machine, print_table, warm_server

CLI = Path(sys.executable).with_name("rawp-adapters")
"""The console script a Master spawns (the venv's ``rawp-adapters``)."""

_WAIT_S = 30.0

LIBRARIES = (
    "import anyio, msgspec, psutil\n"
    "from pydantic import BaseModel\n"
    "class Built(BaseModel):\n"
    "    text: str\n"
    "Built(text='')\n"
    "async def started() -> None: ...\n"
    "anyio.run(started)\n"
    "print('ready', flush=True)\n"
    "import sys; sys.stdin.read()\n"
)
"""What every bridge imports and starts whatever its own code: the floor."""

COMPILING_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
"""The environment of every process measured: bytecode written once, as installed."""


def until_line(
    command: Sequence[str],
    marker: bytes,
    *,
    env: dict[str, str] = COMPILING_ENV,
    children_of: Sequence[int] = (),
) -> tuple[float, float]:
    """Seconds from spawning ``command`` to the first line of its stdout that holds
    ``marker``, and the CPU seconds the process (and the children of ``children_of``:
    a warm server's session process) used until then; the process is then ended by
    closing its stdin."""
    started = time.perf_counter()
    with subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
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
        cpu = cpu_seconds(child.pid)
        for parent in children_of:
            cpu += sum(cpu_seconds(c.pid) for c in psutil.Process(parent).children())
        child.stdin.close()
        child.wait(_WAIT_S)
    return elapsed, cpu


def cpu_seconds(pid: int) -> float:
    """The CPU seconds process ``pid`` (all its threads) has used: from the scheduler's
    nanosecond counts on Linux, else psutil's (in clock ticks, 10 ms on most systems)."""
    try:
        return (
            sum(
                int(stats.read_text().split()[0])
                for stats in Path(f"/proc/{pid}/task").glob("*/schedstat")
            )
            / 1e9
        )
    except (OSError, ValueError):
        times = psutil.Process(pid).cpu_times()
        return times.user + times.system


@contextmanager
def listening(command: Sequence[str], path: Path) -> Iterator[int]:
    """``command`` (a ``serve --listen path``) running and listening; yields its pid."""
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=COMPILING_ENV
    ) as server:
        assert server.stdout is not None
        announced = server.stdout.readline()
        if json.loads(announced or b"null") != {"listening": str(path)}:
            raise RuntimeError(f"serve --listen did not start: {announced[:300]!r}")
        try:
            yield server.pid
        finally:
            server.terminate()
            server.wait(_WAIT_S)


def until_capabilities(path: Path, server_pid: int) -> tuple[float, float]:
    """Seconds from connecting to ``path`` to the ``session.capabilities`` line, and the
    CPU seconds the server used meanwhile; the session then ends (end of input)."""
    cpu_before = cpu_seconds(server_pid)
    started = time.perf_counter()
    with socket.socket(socket.AF_UNIX) as connection:
        connection.settimeout(_WAIT_S)
        connection.connect(str(path))
        connection.sendall(b"{}\n")
        reader = connection.makefile("rb")
        if b'"session.capabilities"' not in reader.readline():
            raise RuntimeError("serve --listen: the first frame is not session.capabilities")
        elapsed = time.perf_counter() - started
        cpu = cpu_seconds(server_pid) - cpu_before
        connection.shutdown(socket.SHUT_WR)
        while reader.readline():  # until the session is closed
            pass
    return elapsed, cpu


def until_exit(command: Sequence[str]) -> tuple[float, float]:
    """Seconds from spawning ``command`` to its exit, and the CPU seconds it used."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, check=True, stdin=subprocess.DEVNULL, env=COMPILING_ENV)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return elapsed, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


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
        socket_path = Path(workspace) / "bridge.sock"
        resident = [*bridge[:2], "--listen", str(socket_path), *bridge[3:]]
        measured: dict[str, list[tuple[float, float]]] = {
            "agent": [],
            "bridge": [],
            "warm": [],
            "listen": [],
            "import": [],
            "libraries": [],
            "bare": [],
        }
        warm = [*bridge[:3], "--warm", *bridge[3:]]

        def first_warm_start(env: dict[str, str]) -> None:  # it imports the adapter too
            until_line(warm, b'"session.capabilities"', env=env)

        until_line(bridge, b'"session.capabilities"')  # warm the page cache
        with (
            listening(resident, socket_path) as server,
            warm_server(Path(workspace, "warm"), COMPILING_ENV, first_warm_start) as (
                warm_env,
                warm_pid,
            ),
        ):
            until_capabilities(socket_path, server)  # the first session imports the adapter
            for _ in range(args.runs):
                measured["agent"].append(until_line(agent, b'"ready"'))
                measured["bridge"].append(until_line(bridge, b'"session.capabilities"'))
                measured["warm"].append(
                    until_line(
                        warm, b'"session.capabilities"', env=warm_env, children_of=[warm_pid]
                    )
                )
                measured["listen"].append(until_capabilities(socket_path, server))
                measured["import"].append(
                    until_exit([sys.executable, "-c", "import rawp_adapters.cli"])
                )
                measured["libraries"].append(
                    until_line([sys.executable, "-c", LIBRARIES], b"ready")
                )
                measured["bare"].append(until_exit([sys.executable, "-c", "pass"]))
    ms = {name: median(t for t, _ in runs) * 1000 for name, runs in measured.items()}
    cpu = {name: median(c for _, c in runs) * 1000 for name, runs in measured.items()}

    def row(label: str, name: str, baseline: str | None) -> list[Cell]:
        if baseline is None:
            return [label, ms[name], cpu[name], None, None, None]
        return [
            label,
            ms[name],
            cpu[name],
            ms[name] - ms[baseline],
            cpu[name] - cpu[baseline],
            f"{ms[name] / ms[baseline]:.2f}x",
        ]

    print_table(
        f"Cold start, median of {args.runs} runs (issue 19: bridge - agent < 100 ms)",
        ["from spawn to", "ms", "cpu ms", "added ms", "added cpu ms", "ratio"],
        [
            row("agent alone: its ready line (baseline)", "agent", None),
            row("serve --stdio: session.capabilities", "bridge", "agent"),
            row("serve --stdio --warm: session.capabilities", "warm", "agent"),
            row("serve --listen: connect to capabilities", "listen", "agent"),
            row("the libraries alone: their ready line", "libraries", "agent"),
            row("python -c pass", "bare", None),
            row("python -c 'import rawp_adapters.cli'", "import", "bare"),
        ],
    )


if __name__ == "__main__":
    main()
