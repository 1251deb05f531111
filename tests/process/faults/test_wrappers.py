"""An agent command that is a wrapper (npx, uvx: it ignores SIGTERM, starts a grandchild
in a session of its own, double-forks an orphan that keeps the session's environment,
then runs the real agent) leaves nothing behind once ``session.closed`` is read, and its
command line is never run once more with ``--version`` unless the settings ask for it.

Every process of the wrapper's tree carries a token in its command line
(``fakes/wrapper_agent.py``), by which the tests look for them on the whole host.
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from rawp_adapter_process import ProcessAdapter

from rawp_adapters.frames import SessionCapabilitiesFrame
from rawp_adapters.processes import CONTAINMENT_VAR
from rawp_adapters.testing import drive
from tests.cli.conftest import serve
from tests.process.helpers import FAKES, fake_command
from tests.support.processes import CONTAINMENT_PARAMS

pytestmark = pytest.mark.anyio

WRAPPER = FAKES / "wrapper_agent.py"
WAIT = 30.0


class Wrapper:
    """The command line of a wrapped fake agent (ready once it answers ``get_state``, so
    that nothing names its version), the runs it logs, and its processes."""

    def __init__(self, directory: Path) -> None:
        self.token = f"wrapped-{uuid.uuid4().hex}"
        self.log = directory / "runs.jsonl"
        self.command = [
            sys.executable,
            "-I",
            "-S",
            str(WRAPPER),
            self.token,
            str(self.log),
            *fake_command("--no-ready", self.token),
        ]

    def version_asked(self) -> list[bool]:
        """For every run of the wrapper, in order: was it asked for ``--version``?"""
        return ["--version" in json.loads(line) for line in self.log.read_text().splitlines()]

    def processes(self, role: str | None = None) -> list[psutil.Process]:
        """Its processes alive now (the sleepers of ``role`` only, if given)."""
        found = []
        for proc in psutil.process_iter(["cmdline", "status"]):
            cmdline = proc.info["cmdline"] or []
            if self.token not in cmdline or proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            if role is None or cmdline[-1:] == [role]:
                found.append(proc)
        return found

    def kill_all(self) -> None:
        for proc in self.processes():
            proc.kill()


@pytest.fixture
def wrapper(tmp_path: Path) -> Iterator[Wrapper]:
    wrapped = Wrapper(tmp_path)
    yield wrapped
    wrapped.kill_all()  # whatever a failed run left behind


@pytest.fixture(params=CONTAINMENT_PARAMS)
def containment(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    mechanism: str = request.param
    monkeypatch.setenv(CONTAINMENT_VAR, mechanism)
    return mechanism


def adapter(wrapper: Wrapper, **settings: object) -> ProcessAdapter:
    return ProcessAdapter.from_settings(
        {"command": wrapper.command, "stdin_close_grace": 0.1, "sigterm_grace": 0.4, **settings}
    )


async def test_nothing_of_a_wrapper_s_tree_is_left_when_session_closed_is_read_and_it_ran_once(
    containment: str, wrapper: Wrapper, tmp_path: Path
) -> None:
    async with drive(adapter(wrapper), workspace=tmp_path, timeout=WAIT) as driver:
        capabilities = await driver.wait_for(SessionCapabilitiesFrame)
        record = await driver.prompt("hello")
        assert record.text == "echo: hello"
        # The wrapper, the agent, the grandchild and the orphan run now.
        assert len(wrapper.processes()) >= 4
        assert len(wrapper.processes("agent")) == 2
        closed = await driver.end()
        assert wrapper.processes() == []
    assert closed.payload.reason == "explicit"
    assert capabilities.payload.agent is not None
    assert capabilities.payload.agent.version is None
    assert wrapper.version_asked() == [False]


async def test_a_version_probe_asked_for_runs_confined_and_is_gone_before_the_session_starts(
    containment: str, wrapper: Wrapper, tmp_path: Path
) -> None:
    probed = adapter(wrapper, version_probe="always")
    async with drive(probed, workspace=tmp_path, timeout=WAIT) as driver:
        await driver.wait_for(SessionCapabilitiesFrame)
        assert wrapper.processes("version") == []
        assert len(wrapper.processes("agent")) == 2
        await driver.end()
        assert wrapper.processes() == []
    assert sorted(wrapper.version_asked()) == [False, True]


async def test_a_wrapper_run_by_the_stdio_bridge_is_gone_when_session_closed_is_written(
    wrapper: Wrapper, tmp_path: Path
) -> None:
    settings = json.dumps({"command": wrapper.command, "sigterm_grace": 0.4})
    args = ("--adapter", "process", "--settings-json", settings, "--workspace", str(tmp_path))
    async with serve(*args, env=None, cwd=tmp_path, stderr=tmp_path / "err") as bridge:
        await bridge.until("agent.state.changed", state="idle")
        assert len(wrapper.processes("agent")) == 2
        await bridge.close_stdin()
        await bridge.until("session.closed")
        assert wrapper.processes() == []
        assert await bridge.exit_code() == 0
    assert wrapper.version_asked() == [False]
