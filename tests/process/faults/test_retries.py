"""An agent that retries a failed model call by itself (pi: ``agent_end``, then
``auto_retry_start``, idle while it waits): the turn stays open until the retries are
over, and nothing of theirs lands after the turn's end."""

from __future__ import annotations

from pathlib import Path

import pytest

from rawp_adapters.frames import AgentErrorFrame
from rawp_adapters.testing import SessionDriver, TurnRecord, drive
from tests.process.helpers import fake_adapter

pytestmark = pytest.mark.anyio

WAIT = 15.0


def between(driver: SessionDriver, first: TurnRecord, second: TurnRecord) -> list[str]:
    """The frames after ``first`` ended and before ``second`` started (but the session's
    own ``agent.state.changed``)."""
    frames = driver.frames
    start = frames.index(first.end) + 1
    gap = frames[start : frames.index(second.frames[0])]
    return [frame.type for frame in gap if frame.type != "agent.state.changed"]


async def test_a_turn_stays_open_while_the_agent_retries_and_ends_with_the_retrys_answer(
    tmp_path: Path,
) -> None:
    async with drive(fake_adapter(), workspace=tmp_path) as driver:
        retried = await driver.prompt("RETRY 1 3", timeout=WAIT)
        after = await driver.prompt("again", timeout=WAIT)

    assert retried.stop_reason == "end_turn"
    assert retried.text == "attempt 0 breaks offthe retry's answer"
    (warning,) = retried.of_type(AgentErrorFrame)
    assert (warning.payload.severity, warning.payload.error_code) == ("warning", "AGENT_ERROR")
    assert "retries it in 0.3 s (attempt 1/3)" in warning.payload.message
    assert between(driver, retried, after) == []
    assert (after.stop_reason, after.text) == ("end_turn", "echo: again")
    assert not after.of_type(AgentErrorFrame)


async def test_retries_that_give_up_end_their_own_turn_with_the_final_error_and_not_the_next(
    tmp_path: Path,
) -> None:
    async with drive(fake_adapter(), workspace=tmp_path) as driver:
        failed = await driver.prompt("RETRY 3 2", timeout=WAIT)
        after = await driver.prompt("again", timeout=WAIT)

    assert failed.stop_reason == "error"
    assert failed.text == "attempt 0 breaks offattempt 1 breaks offattempt 2 breaks off"
    errors = [(e.payload.severity, e.payload.message) for e in failed.of_type(AgentErrorFrame)]
    assert [severity for severity, _ in errors] == ["warning", "warning", "error"]
    assert "attempt 2/2" in errors[1][1]
    assert "terminated" in errors[2][1]
    assert between(driver, failed, after) == []
    assert (after.stop_reason, after.text) == ("end_turn", "echo: again")
    assert not after.of_type(AgentErrorFrame)
