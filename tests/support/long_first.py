"""The suite's longest tests start first, spread over the xdist workers.

``--dist worksteal`` hands each worker one contiguous share of the collected tests and
later lets idle workers take tests from the end of a busy one's share. A long test at
the end of a share would start last and keep the run going alone; so each share begins
with its part of the long tests (longest first, each share's total kept even), and
the short ones fill the rest in their usual order. Where the order comes from changes
nothing else: every worker collects the same tests in the same order.

The checks that run four agents at once (``--jobs 4``) open one share together, one
after another: at the heads of three shares they had run twelve agents at once on two
cores, and an agent beside them (opencode) took over a minute to start.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest


@dataclass(frozen=True)
class LongTest:
    """A test that took ``seconds`` in a whole run on 2 loaded cores (only the order
    matters), by its file under ``tests/``, the start of its name and a part of its
    parameters' id; ``fans_out``: it runs four agents at once."""

    seconds: float
    path: str
    name: str
    params: str = ""
    fans_out: bool = False


LONG_TESTS: tuple[LongTest, ...] = (
    LongTest(350, "acp/test_acp_conformance.py", "test_the_readmes_acp_check", "opencode"),
    LongTest(150, "acp/test_python_agents.py", "test_the_readmes_acp_check_of_vibe", "", True),
    LongTest(115, "acp/test_acp_conformance.py", "test_the_readmes_acp_check", "copilot", True),
    LongTest(95, "acp/test_python_agents.py", "test_the_readmes_acp_check_of_fast", "", True),
    LongTest(90, "acp/test_real_acp_agents.py", "test_a_second_session_resumes", "trio-opencode"),
    LongTest(80, "conformance/test_check_cli.py", "test_the_readmes_check_of_a_real", "", True),
    LongTest(55, "acp/test_real_acp_agents.py", "test_thinking_text_a_tool", "trio-opencode"),
    LongTest(55, "sdk_cores/test_delegation.py", "test_the_cores_model_delegates", "trio-copilot"),
    LongTest(50, "acp/test_python_agents.py", "test_vibe_thinks_answers_runs_bash"),
    LongTest(45, "acp/test_live_control.py", "test_plans_models_and_the_refused", "opencode"),
    LongTest(45, "acp/test_real_acp_agents.py", "test_abort_while_streaming", "trio-opencode"),
    LongTest(40, "copilot/test_conformance.py", "test_the_readmes_check_of_the_copilot_core"),
    LongTest(30, "acp/test_python_agents.py", "test_fast_agent_asks_before_mcp_tools"),
)


def long_first(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Reorder ``items`` in place on an xdist worker, for the workers of this run (a
    worker's own ``dist`` option is always ``no``: ``--dist worksteal`` is taken as given)."""
    workers = getattr(config, "workerinput", {}).get("workercount")
    if workers is None:
        return
    shares = _share_sizes(len(items), workers)
    found = sorted(
        ((item, test) for item in items if (test := _long_test(item)) is not None),
        key=lambda pair: -pair[1].seconds,
    )
    fanning = [pair for pair in found if pair[1].fans_out]
    blocks = [[pair] for pair in found if not pair[1].fans_out] + ([fanning] if fanning else [])
    blocks.sort(key=lambda block: -sum(test.seconds for _, test in block))
    heads: list[list[pytest.Item]] = [[] for _ in shares]
    loads = [0.0] * len(shares)
    for block in blocks:
        share = min(range(len(shares)), key=lambda i: (loads[i], len(heads[i])))
        heads[share] += [item for item, _ in block]
        loads[share] += sum(test.seconds for _, test in block)
    if any(len(head) > size for head, size in zip(heads, shares, strict=True)):
        return  # a few tests over many workers: nothing waits behind a long one
    chosen = {id(item) for item, _ in found}
    rest = iter([item for item in items if id(item) not in chosen])
    ordered = []
    for head, size in zip(heads, shares, strict=True):
        ordered += head
        ordered += [next(rest) for _ in range(size - len(head))]
    items[:] = ordered


def _share_sizes(count: int, workers: int) -> list[int]:
    """How many tests worksteal sends each worker at the start (its own split)."""
    sizes: list[int] = []
    for remaining_workers in range(workers, 0, -1):
        sizes.append((count - sum(sizes)) // remaining_workers)
    return sizes


def _long_test(item: pytest.Item) -> LongTest | None:
    for long_test in LONG_TESTS:
        test = f"tests/{long_test.path}::{long_test.name}"
        if item.nodeid.startswith(test) and long_test.params in item.nodeid[len(test) :]:
            return long_test
    return None
