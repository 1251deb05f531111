"""What the process adapter keeps of a flooding agent stays bounded: lines that are not
JSON before it is ready (each one logged before: a host keeping its logs grew without
bound), and dialogs (each one a task and an open interaction before)."""

from __future__ import annotations

import logging
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest
from rawp_adapter_process._rpc import MAX_OPEN_DIALOGS

from rawp_adapters.frames import AgentErrorFrame, InteractionRequestFrame
from rawp_adapters.testing import drive, never_answer
from tests.process.helpers import fake_adapter

pytestmark = pytest.mark.anyio

WAIT = 60.0
BANNER_LINES = 100_000
DIALOGS = 20_000
CEILING = 16 * 1024 * 1024
"""Python memory (tracemalloc peak) a flooded session may grow by. Measured: 2.8 MiB for
100k banner lines, 1.4 MiB for 20k dialogs; before the bounds 187 MiB (log records a host
keeps) and 167 MiB (a task and an interaction per dialog)."""


@pytest.fixture
def traced() -> Iterator[None]:
    tracemalloc.start()
    try:
        yield
    finally:
        tracemalloc.stop()


def growth() -> int:
    return tracemalloc.get_traced_memory()[1]


@pytest.mark.usefixtures("traced")
async def test_a_flood_of_junk_before_ready_is_skipped_with_a_bounded_log_and_memory(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    adapter = fake_adapter("--banner", str(BANNER_LINES))
    async with drive(adapter, workspace=tmp_path, timeout=WAIT) as driver:
        turn = await driver.prompt("hello", timeout=WAIT)
    assert turn.stop_reason == "end_turn"
    assert growth() - base < CEILING
    skipped = [r for r in caplog.records if "not JSON" in r.getMessage()]
    assert 1 < len(skipped) < 30
    assert all(r.levelno == logging.WARNING for r in skipped)


@pytest.mark.usefixtures("traced")
async def test_a_flood_of_dialogs_is_refused_beyond_the_open_ones_with_one_warning(
    tmp_path: Path,
) -> None:
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    async with drive(fake_adapter(), workspace=tmp_path, policy=never_answer, timeout=WAIT) as d:
        turn = await d.prompt(f"DIALOGS {DIALOGS}", timeout=WAIT)
        after = await d.prompt("hello", timeout=WAIT)
    assert growth() - base < CEILING
    assert turn.stop_reason == after.stop_reason == "end_turn"
    assert len(d.of_type(InteractionRequestFrame)) <= MAX_OPEN_DIALOGS
    (warning,) = turn.of_type(AgentErrorFrame)
    assert warning.payload.severity == "warning"
    assert f"more than {MAX_OPEN_DIALOGS} dialogs" in warning.payload.message
