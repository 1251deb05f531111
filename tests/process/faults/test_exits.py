"""How an agent's end is reported (rule 5): every exit-code class, signal deaths, deaths
while idle or before ready, a missing binary and a death with a dialog open."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import anyio
import pytest
from rawp_adapter_process import ProcessAdapter, ProcessSettings

from rawp_adapters.frames import (
    AgentError,
    AgentErrorFrame,
    InteractionRequestFrame,
    SessionClosed,
    SessionClosedFrame,
    TurnEndFrame,
)
from rawp_adapters.testing import SessionDriver, drive, never_answer
from tests.process.helpers import fake_adapter, running, the_fake_agent

pytestmark = pytest.mark.anyio

WAIT = 15.0


def only_error(driver: SessionDriver) -> AgentError:
    errors = driver.of_type(AgentErrorFrame)
    assert len(errors) == 1, [e.payload for e in errors]
    return errors[0].payload


async def run_to_death(driver: SessionDriver, prompt: str) -> tuple[str, SessionClosed]:
    """Send a prompt the agent dies in; the turn's stop reason and the close."""
    record = await driver.prompt(prompt, timeout=WAIT)
    closed = await driver.closed(timeout=WAIT)
    return record.stop_reason, closed.payload


async def test_an_agent_that_exits_0_mid_turn_ends_the_turn_and_the_session(
    tmp_path: Path,
) -> None:
    async with drive(fake_adapter(), workspace=tmp_path) as driver:
        stop_reason, closed = await run_to_death(driver, "EXIT 0")
    assert stop_reason == "end_turn"
    assert closed.reason == "agent_exit"
    assert closed.exit_code == 0
    assert driver.of_type(AgentErrorFrame) == []


@pytest.mark.parametrize("code", [1, 2, 42, 127])
async def test_an_agent_that_exits_1_to_127_mid_turn_is_a_fatal_process_exit(
    tmp_path: Path, code: int
) -> None:
    async with drive(fake_adapter(), workspace=tmp_path) as driver:
        stop_reason, closed = await run_to_death(driver, f"EXIT {code}")
    error = only_error(driver)
    assert stop_reason == "error"
    assert (error.severity, error.error_code, error.exit_code) == ("fatal", "PROCESS_EXIT", code)
    assert error.signal is None
    assert error.stderr_tail is not None
    assert f"fatal error, exiting with {code}" in error.stderr_tail
    assert (closed.reason, closed.exit_code) == ("agent_exit", code)


@pytest.mark.parametrize(
    ("code", "name"), [(129, "SIGHUP"), (130, "SIGINT"), (137, "SIGKILL"), (143, "SIGTERM")]
)
async def test_an_exit_code_of_128_plus_n_is_a_signal_exit_naming_signal_n(
    tmp_path: Path, code: int, name: str
) -> None:
    async with drive(fake_adapter(), workspace=tmp_path) as driver:
        stop_reason, closed = await run_to_death(driver, f"EXIT {code}")
    error = only_error(driver)
    assert stop_reason == "error"
    assert (error.severity, error.error_code) == ("fatal", "SIGNAL_EXIT")
    assert (error.signal, error.exit_code) == (name, code)
    assert (closed.reason, closed.signal) == ("agent_exit", name)


@pytest.mark.parametrize("name", ["SIGKILL", "SIGSEGV", "SIGINT", "SIGTERM", "SIGABRT"])
async def test_a_raw_signal_death_mid_turn_is_a_signal_exit_naming_the_signal(
    tmp_path: Path, name: str
) -> None:
    async with drive(fake_adapter(), workspace=tmp_path) as driver:
        stop_reason, closed = await run_to_death(driver, f"KILL {name}")
    error = only_error(driver)
    assert stop_reason == "error"
    assert (error.severity, error.error_code, error.signal) == ("fatal", "SIGNAL_EXIT", name)
    assert error.exit_code is None
    assert error.stderr_tail is not None
    assert f"about to die by {name}" in error.stderr_tail
    assert (closed.reason, closed.signal) == ("agent_exit", name)


async def test_an_agent_that_exits_while_idle_reports_an_error_and_closes_the_session(
    tmp_path: Path,
) -> None:
    async with drive(fake_adapter("--exit-on-usr1", "3"), workspace=tmp_path) as driver:
        os.kill(the_fake_agent().pid, signal.SIGUSR1)
        closed = await driver.closed(timeout=WAIT)
    error = only_error(driver)
    assert (error.severity, error.error_code, error.exit_code) == ("fatal", "PROCESS_EXIT", 3)
    assert error.stderr_tail is not None
    assert "exiting with 3 while idle" in error.stderr_tail
    assert (closed.payload.reason, closed.payload.exit_code) == ("agent_exit", 3)
    assert driver.of_type(TurnEndFrame) == []


async def test_an_agent_that_exits_0_while_idle_closes_the_session_without_an_error(
    tmp_path: Path,
) -> None:
    async with drive(fake_adapter("--exit-on-usr1", "0"), workspace=tmp_path) as driver:
        os.kill(the_fake_agent().pid, signal.SIGUSR1)
        closed = await driver.closed(timeout=WAIT)
    assert driver.of_type(AgentErrorFrame) == []
    assert (closed.payload.reason, closed.payload.exit_code) == ("agent_exit", 0)


async def test_an_agent_killed_while_idle_reports_a_signal_exit_and_closes_the_session(
    tmp_path: Path,
) -> None:
    async with drive(fake_adapter(), workspace=tmp_path) as driver:
        await driver.prompt("warm up", timeout=WAIT)
        os.kill(the_fake_agent().pid, signal.SIGKILL)
        closed = await driver.closed(timeout=WAIT)
    error = only_error(driver)
    assert (error.severity, error.error_code, error.signal) == ("fatal", "SIGNAL_EXIT", "SIGKILL")
    assert (closed.payload.reason, closed.payload.signal) == ("agent_exit", "SIGKILL")


async def test_an_agent_that_exits_before_ready_fails_to_spawn_with_its_stderr(
    tmp_path: Path,
) -> None:
    async with drive(fake_adapter("--exit-before-ready", "2"), workspace=tmp_path) as driver:
        closed = await driver.closed(timeout=WAIT)
    error = only_error(driver)
    assert (error.severity, error.error_code, error.exit_code) == ("fatal", "SPAWN_FAILED", 2)
    assert error.stderr_tail is not None
    assert "No models available." in error.stderr_tail
    assert closed.payload.reason == "error"


@pytest.mark.parametrize("program", ["rawp-no-such-agent-binary", "not-executable.txt"])
async def test_an_agent_program_that_cannot_run_fails_to_spawn_at_once(
    tmp_path: Path, program: str
) -> None:
    (tmp_path / "not-executable.txt").write_text("not a program")
    command = [str(tmp_path / program) if program.endswith(".txt") else program, "--mode", "rpc"]
    adapter = ProcessAdapter(ProcessSettings(command=command))
    with anyio.fail_after(WAIT):
        async with drive(adapter, workspace=tmp_path) as driver:
            closed = await driver.closed()
    error = only_error(driver)
    assert (error.severity, error.error_code) == ("fatal", "SPAWN_FAILED")
    assert closed.payload.reason == "error"


async def test_an_agent_that_dies_with_a_dialog_open_gets_it_resolved_at_once(
    tmp_path: Path,
) -> None:
    # The interaction would wait a minute for an answer; the death must not wait for it.
    adapter = fake_adapter(interaction_timeout_ms=60_000)
    async with drive(adapter, workspace=tmp_path, policy=never_answer) as driver:
        start = await driver.start_prompt("GATED_HANG")
        request = await driver.wait_for(InteractionRequestFrame, timeout=WAIT)
        agent = the_fake_agent()
        agent.kill()
        record = await driver.wait_turn(start.payload.turn_id, timeout=WAIT)
        closed = await driver.closed(timeout=WAIT)
    assert request.payload.interaction_type == "PERMISSION"
    assert request.payload.context.tool_name == "bash"
    assert record.stop_reason == "error"
    assert only_error(driver).signal == "SIGKILL"
    assert closed.payload.signal == "SIGKILL"
    assert not running(agent.pid)
    assert isinstance(driver.frames[-1], SessionClosedFrame)


async def test_an_agent_that_floods_stderr_is_drained_and_quoted_by_its_tail(
    tmp_path: Path,
) -> None:
    adapter = fake_adapter(stderr_tail_bytes=1024)
    async with drive(adapter, workspace=tmp_path) as driver:
        stop_reason, _ = await run_to_death(driver, "STDERR_FLOOD 8")
    error = only_error(driver)
    assert stop_reason == "error"
    assert error.stderr_tail is not None
    assert error.stderr_tail.endswith("fake agent: the last words")
    assert len(error.stderr_tail) <= 1024
