"""The suite's longest tests start first, spread over the xdist workers.

``--dist worksteal`` hands each worker one contiguous share of the collected tests and
later lets idle workers take tests from the end of a busy one's share. A long test at
the end of a share would start last and keep the run going alone; so each share begins
with its part of the long tests (longest first, each share's total kept even), and
the short ones fill the rest in their usual order. Where the order comes from changes
nothing else: every worker collects the same tests in the same order.
"""

from __future__ import annotations

import pytest

LONG_S: tuple[tuple[float, str, str, str], ...] = (
    (350, "acp/test_acp_conformance.py", "test_the_readmes_acp_check", "opencode"),
    (150, "acp/test_python_agents.py", "test_the_readmes_acp_check_of_vibe", ""),
    (115, "acp/test_acp_conformance.py", "test_the_readmes_acp_check", "copilot"),
    (95, "acp/test_python_agents.py", "test_the_readmes_acp_check_of_fast_agent", ""),
    (90, "acp/test_real_acp_agents.py", "test_a_second_session_resumes", "trio-opencode"),
    (80, "conformance/test_check_cli.py", "test_the_readmes_check_of_a_real_agent", ""),
    (55, "acp/test_real_acp_agents.py", "test_thinking_text_a_tool_allowed", "trio-opencode"),
    (55, "sdk_cores/test_delegation.py", "test_the_cores_model_delegates", "trio-copilot"),
    (50, "acp/test_python_agents.py", "test_vibe_thinks_answers_runs_bash", ""),
    (45, "acp/test_live_control.py", "test_plans_models_and_the_refused", "opencode"),
    (45, "acp/test_real_acp_agents.py", "test_abort_while_streaming", "trio-opencode"),
    (40, "copilot/test_conformance.py", "test_the_readmes_check_of_the_copilot_core", ""),
    (30, "acp/test_python_agents.py", "test_fast_agent_asks_before_mcp_tools", ""),
)
"""Seconds a test took in a whole run on 2 loaded cores (only their order matters), by
its file under ``tests/``, the start of its name and a part of its parameters' id."""


def long_first(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Reorder ``items`` in place on an xdist worker, for the workers of this run (a
    worker's own ``dist`` option is always ``no``: ``--dist worksteal`` is taken as given)."""
    workers = getattr(config, "workerinput", {}).get("workercount")
    if workers is None:
        return
    shares = _share_sizes(len(items), workers)
    long_items = sorted(
        (item for item in items if _seconds(item) is not None),
        key=lambda item: -(_seconds(item) or 0.0),
    )
    heads: list[list[pytest.Item]] = [[] for _ in shares]
    loads = [0.0] * len(shares)
    for item in long_items:
        share = min(range(len(shares)), key=lambda i: (loads[i], len(heads[i])))
        heads[share].append(item)
        loads[share] += _seconds(item) or 0.0
    if any(len(head) > size for head, size in zip(heads, shares, strict=True)):
        return  # a few tests over many workers: nothing waits behind a long one
    chosen = set(map(id, long_items))
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


def _seconds(item: pytest.Item) -> float | None:
    for seconds, path, name, params in LONG_S:
        test = f"tests/{path}::{name}"
        if item.nodeid.startswith(test) and params in item.nodeid[len(test) :]:
            return seconds
    return None
