"""An ACP agent that dies before it is ready: the Master is told how it ended."""

from __future__ import annotations

from pathlib import Path

import pytest
from rawp_adapter_acp import AcpAdapter

from rawp_adapters.frames import AgentErrorFrame, SessionClosedFrame
from rawp_adapters.testing import drive

pytestmark = pytest.mark.anyio


async def start_failure(script: str, workspace: Path) -> tuple[AgentErrorFrame, SessionClosedFrame]:
    adapter = AcpAdapter.from_settings({"command": ["/bin/sh", "-c", script]})
    async with drive(adapter, workspace=workspace) as driver:
        closed = await driver.closed(timeout=15)
    (error,) = driver.of_type(AgentErrorFrame)
    return error, closed


async def test_an_agent_that_exits_before_it_is_ready_is_reported_with_its_code_and_last_words(
    tmp_path: Path,
) -> None:
    error, closed = await start_failure("echo 'no credentials' >&2; exit 3", tmp_path)
    assert (error.payload.severity, error.payload.error_code) == ("fatal", "SPAWN_FAILED")
    assert (error.payload.exit_code, error.payload.signal) == (3, None)
    assert "exited with code 3 before it was ready" in error.payload.message
    assert error.payload.stderr_tail == "no credentials"
    assert closed.payload.reason == "error"


async def test_an_agent_killed_before_it_is_ready_is_reported_with_the_signal(
    tmp_path: Path,
) -> None:
    error, _ = await start_failure("echo 'about to go' >&2; kill -KILL $$", tmp_path)
    assert error.payload.signal == "SIGKILL"
    assert "killed by SIGKILL before it was ready" in error.payload.message
    assert error.payload.stderr_tail == "about to go"


async def test_an_agent_command_that_does_not_exist_ends_the_session_with_one_error(
    tmp_path: Path,
) -> None:
    adapter = AcpAdapter.from_settings({"command": [str(tmp_path / "no-such-agent")]})
    async with drive(adapter, workspace=tmp_path) as driver:
        closed = await driver.closed(timeout=15)
    (error,) = driver.of_type(AgentErrorFrame)
    assert (error.payload.severity, error.payload.error_code) == ("fatal", "SPAWN_FAILED")
    assert "no-such-agent" in error.payload.message
    assert closed.payload.reason == "error"
