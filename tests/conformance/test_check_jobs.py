"""``rawp-adapters check --jobs N``: rules side by side, results in the rules' order.
Run as a user runs it, in a process of its own (its worker pool's helper processes
live as long as the process that made the pool)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BARRIER_AGENT = Path(__file__).parent / "barrier_agent.py"
RULES = ["capabilities-first", "one-turn", "explicit-end"]


def check_with_barrier_agents(
    arrivals: Path, parties: int, rules: list[str]
) -> subprocess.CompletedProcess[str]:
    """``rawp-adapters check process --jobs 2`` over ``rules``, its agent the barrier
    agent recording each start in ``arrivals``."""
    command = [sys.executable, str(BARRIER_AGENT), str(arrivals), str(parties)]
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "rawp_adapters.cli",
            "check",
            "process",
            "--setting",
            f"command={json.dumps(command)}",
            *(arg for rule in rules for arg in ("--rule", rule)),
            "--jobs",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_first_rule_runs_alone_then_the_rest_side_by_side_printed_in_the_order_given(
    tmp_path: Path,
) -> None:
    """No agent starts while the first one runs, and one-turn's and explicit-end's first
    agents each start only once the other has (three arrivals)."""
    checked = check_with_barrier_agents(tmp_path, 3, RULES)
    code, lines = checked.returncode, checked.stdout.splitlines()
    assert code == 0, checked.stdout + checked.stderr
    assert [line.split()[2].rstrip(":") for line in lines[:-1]] == RULES
    assert lines[-1] == "3 passed"
