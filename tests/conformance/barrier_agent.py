"""A fake RPC agent (``tests/process/fakes/rpc_agent.py``) for ``check --jobs``: the
first one starts at once; every later one exits 4 while the first still runs, and
otherwise starts only once PARTIES agents have arrived, or exits 3 if they do not within
``ALONE_S``. Rules run one after another never get past the second rule's first
session; all at once, one of them meets the first still running.

    python barrier_agent.py DIR PARTIES [FLAG ...]
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

RPC_AGENT = Path(__file__).parents[1] / "process" / "fakes" / "rpc_agent.py"
ALONE_S = 30.0
"""Under the process adapter's ready deadline (45 s), so the start fails with our exit."""
POLL_S = 0.02


def main() -> None:
    folder, parties, *flags = sys.argv[1:]
    if "--version" in flags:  # the adapter's version probe is not an agent's start
        print("barrier 0.0.1")
        return
    arrivals = Path(folder)
    (arrivals / f"{time.time_ns()}-{os.getpid()}").touch()
    first, *later = sorted(arrivals.iterdir())
    if later and _running(int(first.name.split("-")[1])):
        sys.exit("an agent started while the first one still runs")
    given_up = time.monotonic() + ALONE_S
    while later and len(list(arrivals.iterdir())) < int(parties):
        if time.monotonic() > given_up:
            sys.exit(f"{parties} agents did not start within {ALONE_S:g} s")
        time.sleep(POLL_S)
    os.execv(sys.executable, [sys.executable, "-I", "-S", str(RPC_AGENT), *flags])


def _running(pid: int) -> bool:
    """``pid`` lives and is no zombie."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][0] != "Z"
    except FileNotFoundError:
        return False


if __name__ == "__main__":
    main()
