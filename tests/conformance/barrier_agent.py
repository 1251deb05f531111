"""A fake RPC agent (``tests/process/fakes/rpc_agent.py``) that starts only once
PARTIES of them have started, and gives up (exit 3) if they do not within
``ALONE_S``: a check whose rules run one after another fails its first rule.

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
    arrivals = Path(folder)
    (arrivals / str(os.getpid())).touch()
    given_up = time.monotonic() + ALONE_S
    while len(list(arrivals.iterdir())) < int(parties):
        if time.monotonic() > given_up:
            sys.exit(f"no other agent started within {ALONE_S:g} s")
        time.sleep(POLL_S)
    os.execv(sys.executable, [sys.executable, "-I", "-S", str(RPC_AGENT), *flags])


if __name__ == "__main__":
    main()
