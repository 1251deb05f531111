"""``rawp-adapters check --jobs N``: rules side by side, results in the rules' order."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from rawp_adapters.cli import main

BARRIER_AGENT = Path(__file__).parent / "barrier_agent.py"
RULES = ["capabilities-first", "one-turn", "explicit-end"]


def test_the_first_rule_runs_alone_then_the_rest_side_by_side_printed_in_the_order_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No agent starts while the first one runs, and one-turn's and explicit-end's first
    agents each start only once the other has (three arrivals)."""
    command = [sys.executable, str(BARRIER_AGENT), str(tmp_path), "3"]
    code = main(
        [
            "check",
            "process",
            "--setting",
            f"command={json.dumps(command)}",
            *(arg for rule in RULES for arg in ("--rule", rule)),
            "--jobs",
            "2",
        ]
    )
    lines = capsys.readouterr().out.splitlines()
    assert code == 0, "\n".join(lines)
    assert [line.split()[2].rstrip(":") for line in lines[:-1]] == RULES
    assert lines[-1] == "3 passed"
