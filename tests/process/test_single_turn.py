"""``single_turn_process``: one one-shot agent process per prompt (fakes/json_agent.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import psutil
import pytest

from rawp_adapters.frames import AgentErrorFrame, SessionErrorFrame
from rawp_adapters.testing import drive
from tests.process.helpers import running, single_turn_adapter

pytestmark = pytest.mark.anyio


async def test_each_prompt_runs_a_process_that_resumes_the_agents_session(
    tmp_path: Path,
) -> None:
    async with drive(single_turn_adapter(), workspace=tmp_path) as d:
        first = await d.prompt("hello")
        second = await d.prompt("again")
        closed = await d.end()
    assert first.text == "resumed=None"
    assert second.text == "resumed=fake-session-1"
    assert first.stop_reason == second.stop_reason == "end_turn"
    (usage,) = second.of_type("session.usage")
    assert (usage.payload.input_tokens, usage.payload.cost_usd) == (7, 0.5)
    assert closed.payload.reason == "explicit"


async def test_the_capabilities_say_single_turn_without_dialogs_or_compaction(
    tmp_path: Path,
) -> None:
    async with drive(single_turn_adapter(), workspace=tmp_path) as d:
        mark = len(d.frames)
        await d.send(d.control.compact())
        error = await d.wait_for(SessionErrorFrame, after=mark)
    features = d.session.features
    assert features.single_turn_process
    assert not features.permission_requests
    assert not features.context_compaction
    assert error.payload.error_code == "UNSUPPORTED"


async def test_a_failing_process_ends_its_turn_with_an_error_and_the_session_goes_on(
    tmp_path: Path,
) -> None:
    async with drive(single_turn_adapter(), workspace=tmp_path) as d:
        failed = await d.prompt("FAIL")
        after = await d.prompt("hello")
    (error,) = failed.of_type(AgentErrorFrame)
    assert (error.payload.error_code, error.payload.exit_code) == ("PROCESS_EXIT", 4)
    assert error.payload.severity == "error"
    assert error.payload.stderr_tail == "the model is not configured"
    assert failed.stop_reason == "error"
    assert after.stop_reason == "end_turn"


async def test_a_process_that_cannot_be_guarded_fails_its_turn_and_is_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    adapter = single_turn_adapter()
    async with drive(adapter, workspace=tmp_path) as d:
        # The agent's command is already set: only the guard's interpreter is missing.
        monkeypatch.setattr(sys, "executable", sys.executable + "-missing-interpreter")
        failed = await d.prompt("hello")
        assert psutil.Process().children(recursive=True) == []
        monkeypatch.undo()
        after = await d.prompt("hello")
    (error,) = failed.of_type(AgentErrorFrame)
    assert error.payload.error_code == "SPAWN_FAILED"
    assert "parent-death guard" in error.payload.message
    assert failed.stop_reason == "error"
    assert after.stop_reason == "end_turn"


async def test_abort_terminates_the_turns_process(tmp_path: Path) -> None:
    async with drive(single_turn_adapter(), workspace=tmp_path) as d:
        start = await d.start_prompt("SLOW")
        await d.wait_for("agent.text.delta")
        await d.send(d.control.abort(start.payload.turn_id))
        turn = await d.wait_turn(start.payload.turn_id, timeout=5)
    assert turn.stop_reason == "cancelled"
    assert not turn.of_type(AgentErrorFrame)


async def test_tool_processes_holding_stdout_are_killed_when_the_agent_exits(
    tmp_path: Path,
) -> None:
    async with drive(single_turn_adapter(), workspace=tmp_path, timeout=10) as d:
        turn = await d.prompt("SPAWN")
    assert turn.stop_reason == "end_turn"
    assert not running(int(turn.text))


async def test_a_missing_one_shot_binary_fails_the_start(tmp_path: Path) -> None:
    adapter = single_turn_adapter(single_turn={"command": [str(tmp_path / "nope")]})
    async with drive(adapter, workspace=tmp_path) as d:
        closed = await d.closed()
    (error,) = d.of_type(AgentErrorFrame)
    assert error.payload.error_code == "SPAWN_FAILED"
    assert closed.payload.reason == "error"
