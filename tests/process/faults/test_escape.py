"""A tool that leaves everything behind (a double fork, ``setsid``, an exec with an empty
environment: out of the agent's process tree, group and session, without the session's
``RAWP_SESSION_ID``) still dies with its session, and only with its own session.

Each test runs with the agent in a cgroup of its own (where this host can make one) and
with the fallback, the agent as a child subreaper (``RAWP_CONTAINMENT`` forces it).
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import psutil
import pytest

from rawp_adapters.processes import CONTAINMENT_VAR, kill_and_wait
from rawp_adapters.testing import SessionDriver, drive
from tests.process.helpers import fake_adapter, running
from tests.support.processes import (
    CONTAINMENT_PARAMS,
    agent_cgroup,
    cgroup_directory,
    cgroup_of,
    needs_cgroups,
)

pytestmark = pytest.mark.anyio

WAIT = 15.0
KILL_MARGIN = 2.5
"""Generous bound on the time from SIGKILL to ``session.closed`` (a loaded CI machine)."""


@pytest.fixture(params=CONTAINMENT_PARAMS)
def containment(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    mechanism: str = request.param
    monkeypatch.setenv(CONTAINMENT_VAR, mechanism)
    return mechanism


class Escape:
    """A session whose agent ran the escaping tool: the agent's pid and the daemon's."""

    def __init__(self, driver: SessionDriver, agent: int, daemon: int) -> None:
        self.driver = driver
        self.agent = agent
        self.daemon = daemon


@asynccontextmanager
async def escaped(workspace: Path, *, stubborn: bool = False) -> AsyncIterator[Escape]:
    """A session whose tool detached a daemon; the daemon is checked to have escaped
    everything but the containment (and is killed at the end, whatever happened)."""
    flags = ["--ignore-sigterm"] if stubborn else []
    adapter = fake_adapter(*flags, stdin_close_grace=0.1, sigterm_grace=0.4)
    daemon: psutil.Process | None = None
    try:
        async with drive(adapter, workspace=workspace) as driver:
            record = await driver.prompt("ESCAPE", timeout=WAIT)
            pids = json.loads(record.text)
            daemon, agent = psutil.Process(pids["daemon"]), psutil.Process(pids["agent"])
            assert daemon.environ() == {}
            assert os.getsid(daemon.pid) not in {os.getsid(agent.pid), os.getsid(0)}
            assert daemon.pid not in {p.pid for p in psutil.Process().children()}
            yield Escape(driver, agent.pid, daemon.pid)
    finally:
        if daemon is not None:
            await kill_and_wait([daemon])  # whatever a failed run left behind


async def test_a_tool_that_double_forks_into_a_new_session_with_an_empty_environment_dies_with_its_session(  # noqa: E501
    containment: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="rawp_adapters")
    async with escaped(tmp_path) as escape:
        if containment == "cgroup":
            assert cgroup_of(escape.daemon) == cgroup_of(escape.agent) != cgroup_of(os.getpid())
        else:
            assert psutil.Process(escape.daemon).ppid() == escape.agent
        closed = await escape.driver.end(timeout=WAIT)
        assert closed.payload.reason == "explicit"
        assert not running(escape.daemon)
        assert not running(escape.agent)
    assert f"containment='{containment}'" in caplog.text


async def test_closing_one_session_leaves_the_escaped_tools_of_another_session_running(
    containment: str, tmp_path: Path
) -> None:
    async with AsyncExitStack() as stack:
        first = await stack.enter_async_context(escaped(tmp_path))
        second = await stack.enter_async_context(escaped(tmp_path))
        await first.driver.end(timeout=WAIT)
        assert not running(first.daemon)
        assert running(second.daemon)
        await second.driver.end(timeout=WAIT)
        assert not running(second.daemon)


async def test_a_stubborn_agent_and_its_escaped_tool_are_gone_soon_after_the_sigterm_grace(
    containment: str, tmp_path: Path
) -> None:
    async with escaped(tmp_path, stubborn=True) as escape:
        started = time.monotonic()
        closed = await escape.driver.end(timeout=WAIT)
        elapsed = time.monotonic() - started
        assert not running(escape.daemon)
    assert closed.payload.signal == "SIGKILL"
    assert 0.5 <= elapsed < 0.5 + KILL_MARGIN


@needs_cgroups
async def test_the_agent_s_cgroup_is_removed_when_its_session_closes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CONTAINMENT_VAR, "cgroup")
    async with escaped(tmp_path) as escape:
        directory = agent_cgroup(escape.agent)
        assert directory.parent == cgroup_directory()
        assert directory.name.startswith(f"rawp-{escape.driver.session.session_id}-")
        assert directory.is_dir()
        await escape.driver.end(timeout=WAIT)
        assert not running(escape.daemon)
    assert not directory.exists()
