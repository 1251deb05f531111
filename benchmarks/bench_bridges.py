"""Many stdio bridges, as a Master in another language runs them: one
``rawp-adapters serve --stdio`` process per session, fresh or with ``--warm``.

For each N (10 and 100; ``--large`` adds 300), N bridges of the process adapter are
spawned at once, fresh, then N with ``--warm`` (their installation's warm server
started before, by one warm start, in a directory of this run). The agent is
``_idle_agent.sh`` (a dash script of ~1 MiB), so the figures are the bridges':

- **open s**: from the first spawn until every bridge's ``session.capabilities`` has
  come;
- **MiB/bridge, PSS**: the bridges' proportional set size (a page that k processes
  share counts 1/k to each), summed, over N: fresh, each bridge process; warm, each
  launcher and each session process the server forked, plus the server itself once;
  the agents aside;
- **MiB/bridge, USS**: the same processes' pages that are theirs alone;
- **close s**: from closing every bridge's stdin until every bridge has exited;
- **growth**: each per-bridge figure at the largest N over the one at 10.

``--warm-to N`` then runs N warm bridges alone (1,000 fresh bridges, about 25 MiB each,
may not fit the machine).

Run: ``.venv/bin/python benchmarks/bench_bridges.py [--large] [--warm-to 1000]``.
"""

from __future__ import annotations

import argparse
import json
import os
import selectors
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

import psutil

from benchmarks._common import MIB, Cell, print_machine, print_table, ratio, warm_server

CLI = Path(sys.executable).with_name("rawp-adapters")
AGENT = Path(__file__).with_name("_idle_agent.sh")
SIZES = (10, 100)
LARGE = 300
_WAIT_S = 120.0


@dataclass(frozen=True, slots=True)
class Figures:
    open_s: float
    pss_mib: float
    uss_mib: float
    close_s: float


def bridge(workspace: Path, *, warm: bool) -> list[str]:
    settings = {"command": [str(AGENT)], "approval": "none"}
    command = [str(CLI), "serve", "--stdio", *(["--warm"] if warm else [])]
    command += ["--adapter", "process", "--settings-json", json.dumps(settings)]
    return [*command, "--workspace", str(workspace)]


def until_capabilities(bridges: Sequence[subprocess.Popen[bytes]]) -> None:
    """Read each bridge's stdout until its ``session.capabilities`` line."""
    seen: dict[int, bytes] = {}
    deadline = time.monotonic() + _WAIT_S
    with selectors.DefaultSelector() as waiting:  # epoll: more than select()'s 1,024 fds
        for b in bridges:
            assert b.stdout is not None
            waiting.register(b.stdout.fileno(), selectors.EVENT_READ)
            seen[b.stdout.fileno()] = b""
        while seen:
            ready = waiting.select(deadline - time.monotonic())
            if not ready:
                raise RuntimeError(f"{len(seen)} bridges sent no session.capabilities")
            for key, _ in ready:
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    raise RuntimeError(f"a bridge ended first: {seen[key.fd][:300]!r}")
                seen[key.fd] += chunk
                if b'"session.capabilities"' in seen[key.fd]:
                    del seen[key.fd]
                    waiting.unregister(key.fd)


def memory(pids: Sequence[int]) -> tuple[float, float]:
    """PSS and USS of these processes, summed, in bytes."""
    pss = uss = 0.0
    for pid in pids:
        with suppress(psutil.NoSuchProcess):
            info = psutil.Process(pid).memory_full_info()
            pss += info.pss
            uss += info.uss
    return pss, uss


def run(n: int, workspace: Path, env: dict[str, str], *, server: int | None) -> Figures:
    """N bridges at once (warm when ``server`` is the warm server's pid)."""
    command = bridge(workspace, warm=server is not None)
    started = time.perf_counter()
    bridges = [
        subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        for _ in range(n)
    ]
    try:
        until_capabilities(bridges)
        opened = time.perf_counter() - started
        pids = [b.pid for b in bridges]
        if server is not None:
            pids += [server, *(c.pid for c in psutil.Process(server).children())]
        pss, uss = memory(pids)
        closing = time.perf_counter()
        for b in bridges:
            assert b.stdin is not None
            b.stdin.close()
        for b in bridges:
            assert b.stdout is not None
            b.stdout.read()
            b.wait(_WAIT_S)
        closed = time.perf_counter() - closing
    finally:
        for b in bridges:
            if b.poll() is None:
                b.kill()
                b.wait()
    return Figures(opened, pss / n / MIB, uss / n / MIB, closed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--large", action="store_true", help=f"add {LARGE} bridges")
    parser.add_argument(
        "--warm-to",
        type=int,
        metavar="N",
        help="then N warm bridges alone (fresh ones that many may not fit the machine)",
    )
    args = parser.parse_args()
    sizes = (*SIZES, LARGE) if args.large else SIZES

    print_machine()
    fresh: dict[int, Figures] = {}
    warm: dict[int, Figures] = {}
    with tempfile.TemporaryDirectory(prefix="rawp-bench-") as tmp:
        workspace = Path(tmp)
        env = dict(os.environ)

        def one_warm_start(env: dict[str, str]) -> None:
            command = bridge(workspace, warm=True)
            subprocess.run(command, input=b"", capture_output=True, env=env, check=True)

        with warm_server(workspace / "warm", env, one_warm_start) as (warm_env, server):
            for n in sizes:
                fresh[n] = run(n, workspace, env, server=None)
                warm[n] = run(n, workspace, warm_env, server=server)
            if args.warm_to:
                warm[args.warm_to] = run(args.warm_to, workspace, warm_env, server=server)

    def rows(label: str, figures: dict[int, Figures]) -> list[list[Cell]]:
        return [[label, n, f.open_s, f.pss_mib, f.uss_mib, f.close_s] for n, f in figures.items()]

    print_table(
        "N stdio bridges at once, one session each (idle agent)",
        ["bridges", "N", "open s", "MiB/bridge PSS", "MiB/bridge USS", "close s"],
        [*rows("serve --stdio", fresh), *rows("serve --stdio --warm", warm)],
    )

    def growth(figures: dict[int, Figures]) -> list[Cell]:
        low, high = min(figures), max(figures)
        per = {
            name: [getattr(figures[n], name) / (1 if "mib" in name else n) for n in (low, high)]
            for name in ("open_s", "pss_mib", "uss_mib", "close_s")
        }
        return [f"{low} to {high}", *(ratio(b, a) for a, b in per.values())]

    print_table(
        "growth (per bridge, at the largest N over at the smallest; 1.00x is linear)",
        ["bridges", "N", "open s", "PSS", "USS", "close s"],
        [
            [label, *growth(f)]
            for label, f in (("serve --stdio", fresh), ("serve --stdio --warm", warm))
        ],
    )
    ratios: list[list[Cell]] = [
        [n, ratio(fresh[n].open_s, warm[n].open_s), ratio(fresh[n].pss_mib, warm[n].pss_mib)]
        for n in sizes
    ]
    print_table("fresh over warm", ["N", "open s", "MiB/bridge PSS"], ratios)


if __name__ == "__main__":
    main()
