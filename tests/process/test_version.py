"""The agent's version in ``session.capabilities``: ``<command> --version``, once per
command line, bounded in time, for the agents known to answer it (or when the settings
ask); no version is never a failed session."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import anyio
import pytest
from rawp_adapter_process import ProcessAdapter
from rawp_adapter_process._version import agent_version, known_agent

from rawp_adapters.frames import SessionCapabilitiesFrame
from rawp_adapters.plugins import get_logger
from rawp_adapters.testing import drive
from tests.process.helpers import RPC_AGENT, fake_adapter, running
from tests.support.peers import PEER_NAMES, peer_command

pytestmark = pytest.mark.anyio

LOG = get_logger("test")


def script(code: str) -> list[str]:
    return [sys.executable, "-I", "-S", "-c", code]


async def test_the_version_is_what_the_command_prints_for_version(tmp_path: Path) -> None:
    argv = script("import sys; print('omp/18.2.3' if sys.argv[1:] == ['--version'] else '')")
    assert await agent_version(argv, env={}, cwd=tmp_path, log=LOG) == "18.2.3"


async def test_a_version_printed_on_stderr_counts_too(tmp_path: Path) -> None:
    argv = script("import sys; sys.stderr.write('0.73.1\\n')")
    assert await agent_version(argv, env={}, cwd=tmp_path, log=LOG) == "0.73.1"


async def test_the_version_is_asked_once_per_command_line(tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    argv = script(f"open({str(calls)!r}, 'a').write('x'); print('0.73.1')")
    first = await agent_version(argv, env={}, cwd=tmp_path, log=LOG)
    second = await agent_version(argv, env={}, cwd=tmp_path, log=LOG)
    assert first == second == "0.73.1"
    assert calls.read_text() == "x"


@pytest.mark.parametrize(
    "code",
    ["print('no version here')", "import sys; print('1.2.3'); sys.exit(2)"],
    ids=["no-version", "failed"],
)
async def test_a_command_without_a_version_answer_has_none(tmp_path: Path, code: str) -> None:
    assert await agent_version(script(code), env={}, cwd=tmp_path, log=LOG) is None


async def test_a_version_that_takes_too_long_is_given_up_and_its_command_killed(
    tmp_path: Path,
) -> None:
    pid_file = tmp_path / "pid"
    argv = script(f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); "
                  "time.sleep(60)")  # fmt: skip
    with anyio.move_on_after(1) as bound:
        await agent_version(argv, env={}, cwd=tmp_path, log=LOG)
    assert bound.cancelled_caught
    assert not running(int(pid_file.read_text()))


async def test_a_session_waits_for_the_version_only_briefly_after_the_agent_is_ready(
    tmp_path: Path,
) -> None:
    slow = tmp_path / "slow_version.py"
    slow.write_text(
        "import os, sys, time\n"
        "if sys.argv[1:] == ['--version']:\n"
        "    time.sleep(60)\n"
        f"os.execv(sys.executable, [sys.executable, {str(RPC_AGENT)!r}, '--no-ready'])\n",
        encoding="utf-8",
    )
    adapter = ProcessAdapter.from_settings(
        {"command": [sys.executable, str(slow)], "version_probe": "always"}
    )
    started = time.monotonic()
    async with drive(adapter, workspace=tmp_path) as driver:
        caps = await driver.wait_for(SessionCapabilitiesFrame)
        waited = time.monotonic() - started
    assert caps.payload.agent is not None
    assert caps.payload.agent.version is None
    assert waited < 10


async def test_an_agent_without_a_version_still_starts_and_reports_none(tmp_path: Path) -> None:
    async with drive(fake_adapter(), workspace=tmp_path) as driver:
        await driver.prompt("hello")
    (caps,) = driver.of_type(SessionCapabilitiesFrame)
    assert caps.payload.agent is not None
    assert caps.payload.agent.name == "fake"


@pytest.mark.parametrize(
    "command",
    [
        ["omp", "--mode", "rpc"],
        ["/usr/local/bin/pi", "--mode", "rpc"],
        ["xcsh", "--mode", "rpc"],
        ["bun", "/x/node_modules/@oh-my-pi/pi-coding-agent/dist/cli.js", "--mode", "rpc"],
        ["node", "--no-warnings", "/x/node_modules/@mariozechner/pi-coding-agent/dist/cli.js"],
        *([*peer_command(name), "--mode", "rpc"] for name in PEER_NAMES),
    ],
)
def test_omp_pi_and_xcsh_are_known_to_answer_version_by_executable_or_package(
    command: list[str],
) -> None:
    assert known_agent(command)


def test_a_link_to_a_known_package_s_script_is_known(tmp_path: Path) -> None:
    script = tmp_path / "node_modules" / "@f5-sales-demo" / "xcsh" / "dist" / "cli.js"
    script.parent.mkdir(parents=True)
    script.touch()
    (tmp_path / "agent").symlink_to(script)
    assert known_agent([str(tmp_path / "agent"), "--mode", "rpc"])


@pytest.mark.parametrize(
    "command",
    [
        ["npx", "@oh-my-pi/pi-coding-agent", "--mode", "rpc"],
        ["uvx", "some-agent"],
        [sys.executable, str(RPC_AGENT)],
        ["node", "/x/node_modules/other-agent/cli.js"],
        ["/opt/omp-wrapper.sh", "--mode", "rpc"],
    ],
)
def test_other_commands_are_not_known_to_answer_version(command: list[str]) -> None:
    assert not known_agent(command)
