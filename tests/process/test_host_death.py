"""A host killed without closing its session takes the agent and its tools with it.

The host (``process_host.py``) is a real process that opens a session and runs one
prompt whose tools start processes in sessions of their own; the test SIGKILLs it.
Its tool processes would run on: the parent-death guard (the host's supervisor) kills
the agent's cgroup, or (without one) the agent's tree and every process marked with the
session's ``RAWP_SESSION_ID``. The agent exits at the end of its stdin, but the
supervisor holds that pipe open until it has stopped the agent: as a subreaper, the
agent would otherwise hand the tools it adopted on to init as it exits.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from rawp_adapters.processes import CONTAINMENT_VAR, kill_and_wait
from tests.process.helpers import fake_command
from tests.support.llm_openai import ScriptedOpenAI
from tests.support.peers import make_peer, peer_available
from tests.support.processes import CONTAINMENT_PARAMS, agent_cgroup, alive, wait_gone

pytestmark = pytest.mark.anyio

HOST_SCRIPT = Path(__file__).with_name("process_host.py")
REPORT_TIMEOUT = 60.0
"""Bound on the host's session start and prompt (a real agent's cold start under load)."""
DEATH_BOUND = 10.0
"""Bound on the agent and its tools disappearing after the host is killed."""


@asynccontextmanager
async def killable_host(
    settings: dict[str, Any],
    workspace: Path,
    prompt: str,
    backend: str,
    env: dict[str, str] | None = None,
) -> AsyncIterator[tuple[anyio.abc.Process, dict[str, Any]]]:
    """A host that ran ``prompt`` in a session, and its report (see ``process_host.py``)."""
    argv = [sys.executable, str(HOST_SCRIPT), json.dumps(settings), str(workspace), prompt]
    host = await anyio.open_process(
        [*argv, backend], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    try:
        assert host.stdout is not None
        with anyio.fail_after(REPORT_TIMEOUT):
            line = await BufferedByteReceiveStream(host.stdout).receive_until(b"\n", 1 << 20)
        yield host, json.loads(line)
    finally:
        with anyio.CancelScope(shield=True):
            if host.returncode is None:
                host.kill()
            await host.wait()
            await host.aclose()


def stdin_ended(pid: int) -> bool:
    """Whether ``pid``'s stdin (a pipe) is at its end: no process holds its write end.
    Read through a reader of the test's own, which takes nothing from the agent."""
    reader = os.open(f"/proc/{pid}/fd/0", os.O_RDONLY | os.O_NONBLOCK)
    try:
        return os.read(reader, 1) == b""
    except BlockingIOError:
        return False
    finally:
        os.close(reader)


async def kill_host_and_expect_gone(
    host: anyio.abc.Process, report: dict[str, Any], tools: list[int]
) -> None:
    """Kill the host; its children (the agent and its supervisor) and ``tools`` must go.

    The supervisor is held stopped until the host is dead, as a loaded machine may leave
    it unscheduled: the agent must not see its stdin end meanwhile (it may exit there,
    handing the orphans it adopted as a subreaper on to init, out of reach)."""
    pids = [*report["children"], *tools]
    processes = [psutil.Process(pid) for pid in pids]
    supervisor = psutil.Process(report["supervisor"])
    (agent,) = set(report["children"]) - {supervisor.pid}
    try:
        assert len(report["children"]) == 2, "the host runs the agent and its supervisor"
        assert all(alive(pid) for pid in pids), "every process runs before the host dies"
        supervisor.suspend()
        try:
            host.kill()
            await host.wait()
            assert not stdin_ended(agent), "the agent's stdin ended before it was stopped"
        finally:
            supervisor.resume()
        await wait_gone(pids, timeout=DEATH_BOUND)
    finally:
        await kill_and_wait(processes)  # whatever a failed run left behind


async def test_an_agent_and_its_tools_die_with_a_host_that_is_killed(
    tmp_path: Path, anyio_backend: str
) -> None:
    settings = {"command": fake_command()}
    async with killable_host(settings, tmp_path, "SPAWN", anyio_backend) as (host, report):
        # Tool-like processes in sessions of their own, one of them already orphaned.
        tools = list(json.loads(report["text"]).values())
        await kill_host_and_expect_gone(host, report, tools)


@pytest.mark.parametrize("containment", CONTAINMENT_PARAMS)
async def test_a_tool_that_double_forked_into_a_new_session_dies_with_a_host_that_is_killed(
    containment: str, tmp_path: Path, anyio_backend: str
) -> None:
    """Without a cgroup, only the agent's subreaper tree holds the daemon (no marker):
    the agent exits at the end of its stdin, and the daemon would then be init's."""
    settings = {"command": fake_command()}
    env = {**os.environ, CONTAINMENT_VAR: containment}
    async with killable_host(settings, tmp_path, "ESCAPE", anyio_backend, env) as (host, report):
        daemon = json.loads(report["text"])["daemon"]
        cgroups = {agent_cgroup(pid) for pid in report["children"]} - {agent_cgroup(host.pid)}
        await kill_host_and_expect_gone(host, report, [daemon])
        assert not any(cgroup.exists() for cgroup in cgroups)


@pytest.fixture(scope="module")
def llm() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI() as server:
        yield server


@pytest.mark.peers
@pytest.mark.skipif(not peer_available("pi"), reason="pi is not installed: scripts/install-peers")
async def test_pi_and_its_background_tool_die_with_a_host_that_is_killed(
    llm: ScriptedOpenAI, tmp_path: Path, anyio_backend: str
) -> None:
    """pi leaves its tool processes running when its stdin closes."""
    peer = make_peer("pi", llm_base_url=llm.base_url, home=tmp_path)
    settings = {
        "command": peer.argv,
        "agent_name": "pi",
        "env_policy": "allowlist",
        "env_allowlist": [],
        "env": peer.env,
    }
    prompt = "RUN_BASH sh -c 'sleep 300 >/dev/null 2>&1 & echo $!'"
    async with killable_host(settings, peer.cwd, prompt, anyio_backend) as (host, report):
        (output,) = report["tool_outputs"]
        match = re.search(r"\d+", output)
        assert match is not None
        sleeper = int(match.group())
        await kill_host_and_expect_gone(host, report, [sleeper])


# Opens SESSIONS sessions on the fake agent (argv as JSON), runs SPAWN in each (tool
# processes in sessions of their own, one orphaned), prints its children and the tools'
# pids on one line and waits to be killed.
MANY_SESSIONS_HOST = """
import json, sys
from contextlib import AsyncExitStack
import anyio, psutil
from rawp_adapter_process import ProcessAdapter
from rawp_adapters.testing import allow_all, drive

async def main(command, workspace, sessions):
    async with AsyncExitStack() as stack:
        tools = []
        for _ in range(sessions):
            adapter = ProcessAdapter.from_settings({"command": command, "agent_name": "fake"})
            d = await stack.enter_async_context(
                drive(adapter, workspace=workspace, policy=allow_all, timeout=60)
            )
            tools += json.loads((await d.prompt("SPAWN")).text).values()
        children = [child.pid for child in psutil.Process().children()]
        print(json.dumps({"children": children, "tools": tools}), flush=True)
        await anyio.sleep_forever()

anyio.run(main, json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3]), backend=sys.argv[4])
"""
SESSIONS = 20
MANY_DEATH_BOUND = 1.0
"""Bound on every agent and tool of a killed host disappearing (issue 12)."""


@pytest.mark.parametrize("containment", CONTAINMENT_PARAMS)
async def test_a_host_killed_with_20_sessions_open_leaves_no_agent_or_tool_behind_within_1_s(
    containment: str, tmp_path: Path, anyio_backend: str
) -> None:
    argv = [sys.executable, "-c", MANY_SESSIONS_HOST, json.dumps(fake_command()), str(tmp_path)]
    env = {**os.environ, CONTAINMENT_VAR: containment}
    host = await anyio.open_process(
        [*argv, str(SESSIONS), anyio_backend],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    processes: list[psutil.Process] = []
    try:
        assert host.stdout is not None
        with anyio.fail_after(REPORT_TIMEOUT):
            line = await BufferedByteReceiveStream(host.stdout).receive_until(b"\n", 1 << 20)
        report = json.loads(line)
        pids = [*report["children"], *report["tools"]]
        processes = [psutil.Process(pid) for pid in pids]
        # One supervisor for the host, whatever its number of sessions.
        assert len(report["children"]) == SESSIONS + 1
        assert len(report["tools"]) == 4 * SESSIONS
        assert all(alive(pid) for pid in pids)
        host.kill()
        await host.wait()
        await wait_gone(pids, timeout=MANY_DEATH_BOUND)
    finally:
        with anyio.CancelScope(shield=True):
            if host.returncode is None:
                host.kill()
            await host.wait()
            await host.aclose()
            await kill_and_wait(processes)  # whatever a failed run left behind
