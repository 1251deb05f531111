"""Ending a session (rule 6): a stubborn agent is killed after the SIGTERM grace, and
every process it started is gone afterwards, even in sessions of their own."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import psutil
import pytest

from rawp_adapters import SessionOptions
from rawp_adapters.frames import AgentErrorFrame
from rawp_adapters.processes import CONTAINMENT_VAR
from rawp_adapters.testing import drive
from tests.process.helpers import fake_adapter, fake_agent_processes, running, the_fake_agent
from tests.support.processes import needs_cgroups

pytestmark = pytest.mark.anyio

WAIT = 15.0
KILL_MARGIN = 2.5
"""Generous bound on the time from SIGKILL to ``session.closed`` (a loaded CI machine)."""


async def end_and_time(
    stdin_close_grace: float, sigterm_grace: float, tmp_path: Path
) -> tuple[float, str | None, int]:
    """End a session on an agent that ignores SIGTERM and the end of its stdin; return how
    long the end took, the signal ``session.closed`` names and the agent's pid."""
    adapter = fake_adapter(
        "--ignore-sigterm", stdin_close_grace=stdin_close_grace, sigterm_grace=sigterm_grace
    )
    async with drive(adapter, workspace=tmp_path) as driver:
        record = await driver.prompt("still answering?", timeout=WAIT)
        assert record.text == "echo: still answering?"
        pid = the_fake_agent().pid
        started = time.monotonic()
        closed = await driver.end(timeout=stdin_close_grace + sigterm_grace + WAIT)
        elapsed = time.monotonic() - started
    assert closed.payload.reason == "explicit"
    return elapsed, closed.payload.signal, pid


async def test_an_agent_that_ignores_sigterm_is_killed_after_the_grace(tmp_path: Path) -> None:
    elapsed, signal_name, pid = await end_and_time(0.1, 0.4, tmp_path)
    assert signal_name == "SIGKILL"
    assert not running(pid)
    assert 0.5 <= elapsed < 0.5 + KILL_MARGIN


async def test_the_default_sigterm_grace_is_five_seconds(tmp_path: Path) -> None:
    elapsed, signal_name, pid = await end_and_time(0.0, 5.0, tmp_path)
    assert signal_name == "SIGKILL"
    assert not running(pid)
    assert 5.0 <= elapsed < 5.0 + KILL_MARGIN


async def test_ending_a_session_kills_tool_processes_in_sessions_of_their_own(
    tmp_path: Path,
) -> None:
    async with drive(fake_adapter(), workspace=tmp_path) as driver:
        record = await driver.prompt("SPAWN", timeout=WAIT)
        pids: dict[str, int] = json.loads(record.text)
        agent = the_fake_agent()
        # Each tool leads a session of its own, so killing the agent's group misses them,
        # and the orphaned sleeper is no longer in the agent's process tree at all.
        assert sorted(pids) == ["keeper", "keeper-sleeper", "orphaner-sleeper", "sleeper"]
        assert all(os.getsid(pid) == pid != os.getsid(agent.pid) for pid in pids.values())
        assert all(running(pid) for pid in pids.values())
        tree = {child.pid for child in agent.children(recursive=True)}
        assert pids["orphaner-sleeper"] not in tree
        await driver.end(timeout=WAIT)
    leftovers = {name: pid for name, pid in pids.items() if running(pid)}
    assert leftovers == {}
    assert not running(agent.pid)


async def test_an_agent_that_never_becomes_ready_fails_to_spawn_and_is_stopped(
    tmp_path: Path,
) -> None:
    adapter = fake_adapter("--mute", ready_timeout=0.5, stdin_close_grace=0.1)
    async with drive(adapter, workspace=tmp_path) as driver:
        closed = await driver.closed(timeout=WAIT)
        errors = driver.of_type(AgentErrorFrame)
    assert [(e.payload.severity, e.payload.error_code) for e in errors] == [
        ("fatal", "SPAWN_FAILED")
    ]
    assert closed.payload.reason == "error"
    assert fake_agent_processes() == []


async def test_an_agent_that_stops_reading_its_stdin_cannot_stall_the_end_of_the_session(
    tmp_path: Path,
) -> None:
    # A prompt far larger than the pipe's buffer blocks the adapter's write for good.
    # (it answers nothing: what it can do is asked for command_timeout before it starts)
    adapter = fake_adapter("--deaf", stdin_close_grace=0.2, sigterm_grace=0.5, command_timeout=2.0)
    options = SessionOptions(abort_grace=0.5)
    async with drive(adapter, workspace=tmp_path, options=options) as driver:
        pid = the_fake_agent().pid
        await driver.start_prompt("x" * 4 * 1024 * 1024)
        started = time.monotonic()
        closed = await driver.end(timeout=WAIT)
        elapsed = time.monotonic() - started
    assert closed.payload.reason == "explicit"
    assert not running(pid)
    assert elapsed < 0.5 + 0.2 + 0.5 + KILL_MARGIN


@needs_cgroups
async def test_a_session_confined_in_a_cgroup_never_scans_the_host_s_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Opening, running and closing a session costs in proportion to its own processes:
    nothing walks /proc (the other sessions' agents, the host's other processes)."""
    monkeypatch.setenv(CONTAINMENT_VAR, "cgroup")
    scans: list[str] = []
    process_iter, children = psutil.process_iter, psutil.Process.children

    def counted_iter(*args: object, **kwargs: object) -> object:
        scans.append("process_iter")
        return process_iter(*args, **kwargs)  # type: ignore[arg-type]

    def counted_children(self: psutil.Process, recursive: bool = False) -> list[psutil.Process]:
        scans.append("children")
        return children(self, recursive)

    monkeypatch.setattr(psutil, "process_iter", counted_iter)
    monkeypatch.setattr(psutil.Process, "children", counted_children)
    async with drive(fake_adapter(), workspace=tmp_path) as driver:
        record = await driver.prompt("SPAWN", timeout=WAIT)
        closed = await driver.end(timeout=WAIT)
    monkeypatch.undo()
    assert closed.payload.reason == "explicit"
    assert scans == []
    assert not any(running(pid) for pid in json.loads(record.text).values())
