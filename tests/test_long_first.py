"""The suite's own scheduling: its longest tests start first on each xdist worker."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

import pytest

from tests.support.long_first import long_first

OPENCODE_CHECK = (
    "tests/acp/test_acp_conformance.py::"
    "test_the_readmes_acp_check_of_the_agent_passes_against_the_scripted_model[opencode]"
)
VIBE_CHECK = (
    "tests/acp/test_python_agents.py::"
    "test_the_readmes_acp_check_of_vibe_passes_against_the_scripted_model"
)
COPILOT_CHECK = OPENCODE_CHECK.replace("opencode", "copilot")
OMP_CHECK = (
    "tests/conformance/test_check_cli.py::"
    "test_the_readmes_check_of_a_real_agent_passes_with_a_scripted_model[omp]"
)


@dataclass
class _Item:
    nodeid: str


@dataclass
class _Config:
    workerinput: dict[str, Any] = field(default_factory=lambda: {"workercount": 2})


def ordered(ids: list[str], config: _Config) -> list[str]:
    items = [_Item(nodeid) for nodeid in ids]
    long_first(cast(pytest.Config, config), cast(list[pytest.Item], items))
    return [item.nodeid for item in items]


def test_each_workers_share_begins_with_its_long_tests_and_the_rest_keep_their_order() -> None:
    short = [f"tests/core/test_x.py::test_{n}" for n in range(8)]
    collected = [*short[:4], OMP_CHECK, *short[4:], COPILOT_CHECK, VIBE_CHECK, OPENCODE_CHECK]
    # worksteal sends 6 tests to the first worker and 6 to the second: the longest (350 s)
    # opens one share, the next two (150 s, 115 s) and the omp check the other
    assert ordered(collected, _Config()) == [
        OPENCODE_CHECK,
        *short[:5],
        VIBE_CHECK,
        COPILOT_CHECK,
        OMP_CHECK,
        *short[5:],
    ]


def test_the_checks_that_run_four_agents_at_once_run_one_after_another_on_one_worker() -> None:
    short = [f"tests/core/test_x.py::test_{n}" for n in range(12)]
    collected = [*short, OMP_CHECK, COPILOT_CHECK, VIBE_CHECK, OPENCODE_CHECK]
    # four workers, four tests each: opencode's check opens one share and the three
    # checks of four agents another, longest first; two shares hold no long test
    assert ordered(collected, _Config(workerinput={"workercount": 4})) == [
        OPENCODE_CHECK,
        *short[:3],
        VIBE_CHECK,
        COPILOT_CHECK,
        OMP_CHECK,
        *short[3:],
    ]


def test_outside_xdist_workers_the_collected_order_stays() -> None:
    collected = ["tests/core/test_x.py::test_a", OPENCODE_CHECK]
    assert ordered(collected, _Config(workerinput={})) == collected
