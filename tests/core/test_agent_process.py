"""rawp_adapters.processes for adapters that run agents: the environment rules, the
exit mapping (§17.2.2) and :class:`AgentProcess` on real processes."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import anyio
import pytest

from rawp_adapters import StartFailed
from rawp_adapters._logging import get_logger
from rawp_adapters.processes import (
    DEFAULT_ENV_ALLOWLIST,
    SESSION_ID_VAR,
    AgentProcess,
    AgentProcessSettings,
    AgentWriteError,
    HostEnvironment,
    agent_environment,
    check_workspace,
    exit_status,
    host_environment,
    host_supervisor,
)
from tests.support.processes import alive

PARENT = {"PATH": "/bin", "HOME": "/home/u", "SECRET_KEY": "s", "RAWP_WORKSPACE_PATH": "/x"}


def env_of(extra: dict[str, str] | None = None, **settings: object) -> dict[str, str]:
    return agent_environment(
        AgentProcessSettings.model_validate(settings),
        session_id="sid",
        workspace=Path("/srv/workspace"),
        extra=extra,
        parent=PARENT,
    )


def test_the_parents_environment_is_inherited_by_default_and_rawp_variables_win() -> None:
    env = env_of(
        {"ADAPTER": "a", "EXTRA": "adapter's", "RAWP_DPS_VERSION": "spoofed"},
        env={"EXTRA": "1", "RAWP_SESSION_ID": "spoofed"},
    )
    assert (env["SECRET_KEY"], env["ADAPTER"], env["EXTRA"]) == ("s", "a", "adapter's")
    assert env["RAWP_SESSION_ID"] == "sid"
    assert env["RAWP_WORKSPACE_PATH"] == "/srv/workspace"
    assert env["RAWP_DPS_VERSION"] == "rawp-dps-1.0"


def test_the_allowlist_policy_keeps_only_the_listed_variables() -> None:
    env = env_of(env_policy="allowlist", env_allowlist=["PATH", "MISSING"])
    assert env == {
        "PATH": "/bin",
        SESSION_ID_VAR: "sid",
        "RAWP_WORKSPACE_PATH": "/srv/workspace",
        "RAWP_DPS_VERSION": "rawp-dps-1.0",
    }


def test_only_an_inherited_environment_is_warned_about() -> None:
    (notice,) = AgentProcessSettings().env_notices()
    assert "secrets included" in notice
    assert ", ".join(DEFAULT_ENV_ALLOWLIST) in notice
    assert AgentProcessSettings(env_policy="allowlist").env_notices() == []


def test_a_hosts_default_policy_applies_unless_set_and_what_it_withholds_never_passes() -> None:
    parent = {**PARENT, "NATS_TOKEN": "t", "COPY": "s3cret"}
    host = HostEnvironment("allowlist", ("NATS_",), frozenset({"s3cret"}))
    with host_environment(host):
        unset = agent_environment(
            AgentProcessSettings(env_allowlist=["PATH", "NATS_TOKEN", "COPY"]),
            session_id="sid",
            workspace=Path("/w"),
            parent=parent,
        )
        inherit = AgentProcessSettings(env_policy="inherit", env={"NATS_OWN": "named"})
        inherited = agent_environment(
            inherit, session_id="sid", workspace=Path("/w"), parent=parent
        )
        assert AgentProcessSettings().env_notices() == []
    assert {k: unset[k] for k in unset if not k.startswith("RAWP_")} == {"PATH": "/bin"}
    assert inherited["SECRET_KEY"] == "s"
    assert inherited["NATS_OWN"] == "named"
    assert "NATS_TOKEN" not in inherited
    assert "COPY" not in inherited
    assert AgentProcessSettings().effective_env_policy() == "inherit"


@pytest.mark.parametrize("workspace", ["relative/dir", "/no/such/dir"])
def test_the_workspace_must_be_an_existing_absolute_directory(workspace: str) -> None:
    with pytest.raises(StartFailed, match="existing absolute directory"):
        check_workspace(Path(workspace))


@pytest.mark.parametrize(
    ("returncode", "exit_code", "signal", "error_code"),
    [
        (0, 0, None, None),
        (1, 1, None, "PROCESS_EXIT"),
        (127, 127, None, "PROCESS_EXIT"),
        (128, 128, None, "PROCESS_EXIT"),
        (130, 130, "SIGINT", "SIGNAL_EXIT"),
        (143, 143, "SIGTERM", "SIGNAL_EXIT"),
        (255, 255, None, "PROCESS_EXIT"),
        (-9, None, "SIGKILL", "SIGNAL_EXIT"),
        (-15, None, "SIGTERM", "SIGNAL_EXIT"),
    ],
)
def test_exit_codes_and_signals_map_to_rule_5(
    returncode: int, exit_code: int | None, signal: str | None, error_code: str | None
) -> None:
    status = exit_status(returncode)
    assert (status.exit_code, status.signal) == (exit_code, signal)
    error = status.error(stderr_tail="tail")
    if error_code is None:
        assert error is None
    else:
        assert error is not None
        assert (error.severity, error.error_code) == ("fatal", error_code)
        assert (error.exit_code, error.signal, error.stderr_tail) == (exit_code, signal, "tail")
        assert (signal or str(returncode)) in error.message


# Ignores SIGTERM and the end of its stdin, says so on stderr (more than the tail keeps).
STUBBORN = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "sys.stderr.write('x' * 5000 + 'the end')\n"
    "sys.stderr.flush()\n"
    "print('ready', flush=True)\n"
    "sys.stdin.read()\n"
    "time.sleep(600)\n"
)


async def first_line(process: AgentProcess) -> bytes:
    """The agent's first stdout line: a pipe may hand it over in pieces."""
    line = b""
    while not line.endswith(b"\n"):
        line += await process.stdout.receive()
    return line


@pytest.mark.anyio
async def test_a_stubborn_agent_is_killed_after_both_graces_and_its_end_reported(
    tmp_path: Path,
) -> None:
    session_id = uuid.uuid4().hex
    process = await AgentProcess.spawn(
        [sys.executable, "-c", STUBBORN],
        cwd=tmp_path,
        env=agent_environment(AgentProcessSettings(), session_id=session_id, workspace=tmp_path),
        marker=(SESSION_ID_VAR, session_id),
        stderr_tail_bytes=16,
        log=get_logger("test"),
    )
    try:
        await process.start_guard()
        assert host_supervisor().watching() == 1
        async with anyio.create_task_group() as tg:
            tg.start_soon(process.drain_stderr)
            with anyio.fail_after(10):
                assert await first_line(process) == b"ready\n"
            await process.write(b"hello\n")
            status = await process.terminate(stdin_grace=0.05, sigterm_grace=0.1)
        assert status is not None
        assert (status.exit_code, status.signal) == (None, "SIGKILL")
        assert process.stderr_tail() == "xxxxxxxxxthe end"
        assert not alive(process.pid)
        with pytest.raises(AgentWriteError):
            await process.write(b"too late\n")
    finally:
        with anyio.CancelScope(shield=True):
            await process.release()
    assert host_supervisor().pid is None


async def spawn_shell(script: str, tmp_path: Path) -> AgentProcess:
    session_id = uuid.uuid4().hex
    return await AgentProcess.spawn(
        ["/bin/sh", "-c", script],
        cwd=tmp_path,
        env=agent_environment(AgentProcessSettings(), session_id=session_id, workspace=tmp_path),
        marker=(SESSION_ID_VAR, session_id),
        stderr_tail_bytes=64,
        log=get_logger("test"),
    )


@pytest.mark.anyio
async def test_last_words_written_to_stderr_after_the_agent_exited_reach_the_tail(
    tmp_path: Path,
) -> None:
    # A child still holding stderr writes after the agent is gone: the pipe's end,
    # not the agent's exit, is what makes the tail complete.
    process = await spawn_shell("(sleep 0.3; echo 'last words' >&2) & exit 3", tmp_path)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(process.drain_stderr)
            with anyio.fail_after(10):
                assert await process.wait() == 3
                assert await process.stderr_ended(within=10)
        assert process.stderr_tail() == "last words"
    finally:
        with anyio.CancelScope(shield=True):
            await process.release()


@pytest.mark.anyio
async def test_waiting_for_the_end_of_stderr_gives_up_at_its_bound_when_a_child_holds_it(
    tmp_path: Path,
) -> None:
    process = await spawn_shell("sleep 600 & exit 3", tmp_path)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(process.drain_stderr)
            with anyio.fail_after(10):
                assert await process.wait() == 3
                assert not await process.stderr_ended(within=0.2)
            await process.kill_leftovers()
            with anyio.fail_after(10):
                assert await process.stderr_ended(within=10)
    finally:
        with anyio.CancelScope(shield=True):
            await process.release()


@pytest.mark.anyio
async def test_a_guarded_agent_sees_the_end_of_its_stdin_when_the_host_closes_it(
    tmp_path: Path,
) -> None:
    # The supervisor holds a copy of the agent's stdin (so that the host's death cannot
    # end it first): a deliberate close must have it let go of that copy too.
    process = await spawn_shell("cat >/dev/null; exit 7", tmp_path)
    try:
        await process.start_guard()
        await process.close_stdin()
        with anyio.fail_after(10):
            assert await process.wait() == 7
    finally:
        with anyio.CancelScope(shield=True):
            await process.kill_leftovers()
            await process.release()
    assert host_supervisor().pid is None
