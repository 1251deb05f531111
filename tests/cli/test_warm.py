"""``rawp-adapters serve --stdio --warm`` as a Master spawns it: the session runs in a
process forked from the installation's warm server, on the Master's own pipes, with the
launcher's environment, directory, signals and exit (the start's time is measured in
``benchmarks/bench_cold_start.py``)."""

from __future__ import annotations

import json
import os
import re
import resource
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from pathlib import Path
from typing import Any

import psutil
import pytest

from rawp_adapters.testing import assert_valid_stream
from tests.cli.conftest import WAIT, Bridge, frames_of, serve
from tests.process.helpers import fake_command

pytestmark = pytest.mark.anyio

COMMAND = [str(Path(sys.executable).with_name("rawp-adapters"))]
"""The console script, as a Master runs it (``python -m`` would put each working
directory on ``sys.path``: a server per directory)."""
OPEN_FILES = resource.getrlimit(resource.RLIMIT_NOFILE)
LISTENING = re.compile(r"warm server (\d+): listening")


class WarmServers:
    """The warm servers of one test: their own directory, found by their log."""

    def __init__(self, where: Path) -> None:
        self.where = where
        self.env = dict(os.environ, RAWP_ADAPTERS_WARM_DIR=str(where))
        self.env["RAWP_ADAPTERS_WARM_IDLE_S"] = "60"

    def log(self) -> str:
        return "".join(log.read_text() for log in self.where.glob("*.log"))

    def started(self) -> list[int]:
        return [int(pid) for pid in LISTENING.findall(self.log())]

    def serve(self, *args: str, cwd: Path, stderr: Path) -> AbstractAsyncContextManager[Bridge]:
        """``rawp-adapters serve --stdio ARGS`` reaching these servers."""
        return serve(*args, env=self.env, cwd=cwd, stderr=stderr, cli=COMMAND)

    @asynccontextmanager
    async def idle_session(self, tmp_path: Path) -> AsyncIterator[tuple[Bridge, psutil.Process]]:
        """One warm session of the fake agent, up and idle: its bridge, and the server."""
        args = process_args(tmp_path)
        async with self.serve(*args, cwd=tmp_path, stderr=tmp_path / "err") as bridge:
            await bridge.until("agent.state.changed", state="idle")
            (server,) = self.started()
            yield bridge, psutil.Process(server)

    def stop(self) -> None:
        for pid in self.started():
            with suppress(psutil.Error):
                server = psutil.Process(pid)
                if "rawp_adapters._warm._server" in server.cmdline():
                    server.kill()


@pytest.fixture
def warm(tmp_path: Path) -> Iterator[WarmServers]:
    where = tmp_path / "warm"
    where.mkdir(mode=0o700)
    servers = WarmServers(where)
    yield servers
    servers.stop()


def command_lines(processes: list[psutil.Process]) -> list[str]:
    """Their command lines; one that ended meanwhile is left out."""
    lines = []
    for process in processes:
        with suppress(psutil.Error):
            lines.append(" ".join(process.cmdline()))
    return lines


def process_args(workspace: Path | str, command: list[str] | None = None) -> list[str]:
    settings = {"command": command or fake_command("--terminal"), "agent_name": "fake"}
    return [
        "--warm",
        "--adapter",
        "process",
        "--settings-json",
        json.dumps(settings),
        "--workspace",
        str(workspace),
    ]


def start(
    args: list[str], *, env: dict[str, str], cwd: Path, umask: int = 0o022, files: int = 0
) -> subprocess.CompletedProcess[bytes]:
    """One session as a Master that sends nothing runs it, with this umask and, if
    given, this soft limit on open files: its frames, then its exit."""

    def limited() -> None:
        os.umask(umask)
        if files:
            resource.setrlimit(resource.RLIMIT_NOFILE, (files, OPEN_FILES[1]))

    return subprocess.run(
        [*COMMAND, "serve", "--stdio", *args],
        env=env,
        cwd=cwd,
        input=b"",
        capture_output=True,
        timeout=WAIT,
        preexec_fn=limited,
    )


def start_whole(args: list[str], *, env: dict[str, str], cwd: Path, **limits: int) -> None:
    done = start(args, env=env, cwd=cwd, **limits)
    assert done.returncode == 0, done.stderr.decode()
    assert b"starting cold" not in done.stderr
    assert frames_of(done.stdout)[-1]["type"] == "session.closed"


async def one_turn(bridge: Bridge) -> list[dict[str, Any]]:
    """A prompt to an agent that is up, its turn, then the end of the session."""
    await bridge.send("control.prompt.request", {"prompt_id": "p1", "text": "hi"}, seq=1)
    end = await bridge.until("session.turn.end")
    assert end["payload"]["stop_reason"] == "end_turn"
    await bridge.close_stdin()
    return await bridge.rest()


async def test_warm_starts_serve_whole_sessions_from_one_server_that_forks_them(
    tmp_path: Path, warm: WarmServers
) -> None:
    for run in range(2):
        err = tmp_path / f"err{run}"
        async with warm.serve(*process_args(tmp_path), cwd=tmp_path, stderr=err) as bridge:
            await bridge.until("agent.state.changed", state="idle")
            # The launcher forked nothing: the session's process and the agent are the
            # server's descendants.
            launcher = psutil.Process(bridge.process.pid)
            assert launcher.children(recursive=True) == []
            (server,) = warm.started()
            under_server = command_lines(psutil.Process(server).children(recursive=True))
            assert any("rpc_agent" in line for line in under_server)
            frames = await one_turn(bridge)
            assert await bridge.exit_code() == 0, err.read_text()
        assert frames[0]["type"] == "session.capabilities"
        assert frames[-1]["type"] == "session.closed"
        assert_valid_stream(frames)
    assert len(warm.started()) == 1, warm.log()


def test_the_agent_gets_each_launchers_environment_directory_umask_and_limits(
    tmp_path: Path, warm: WarmServers
) -> None:
    seen = tmp_path / "seen"
    report = 'echo "$WARM_PROBE $(pwd) $(umask) $(ulimit -n)" >> "$0"; exec "$@"'
    command = ["sh", "-c", report, str(seen), *fake_command("--terminal")]
    for run, mask, files in ((1, 0o022, 0), (2, 0o027, 500)):
        here = tmp_path / f"cwd{run}"
        (here / "ws").mkdir(parents=True)
        env = dict(warm.env, WARM_PROBE=f"probe{run}")
        start_whole(process_args("ws", command), env=env, cwd=here, umask=mask, files=files)
    assert seen.read_text().splitlines() == [
        f"probe1 {tmp_path / 'cwd1' / 'ws'} 0022 {OPEN_FILES[0]}",
        f"probe2 {tmp_path / 'cwd2' / 'ws'} 0027 500",
    ]
    assert len(warm.started()) == 1


def test_the_warm_server_holds_no_launchers_credentials(tmp_path: Path, warm: WarmServers) -> None:
    seen = tmp_path / "seen"
    command = ["sh", "-c", 'echo "$API_TOKEN" > "$0"; exec "$@"', str(seen)]
    command += fake_command("--terminal")
    env = dict(warm.env, API_TOKEN="secret-of-the-first-session")
    start_whole(process_args(tmp_path, command), env=env, cwd=tmp_path)
    assert seen.read_text() == "secret-of-the-first-session\n"
    (server,) = warm.started()
    assert "API_TOKEN" not in psutil.Process(server).environ()


async def test_sigterm_to_the_launcher_ends_the_session_as_it_ends_a_cold_bridge(
    tmp_path: Path, warm: WarmServers
) -> None:
    codes = []
    for warm_flag in (True, False):
        args = process_args(tmp_path)
        if not warm_flag:
            args.remove("--warm")
        async with warm.serve(*args, cwd=tmp_path, stderr=tmp_path / "err") as bridge:
            await bridge.until("agent.state.changed", state="idle")
            bridge.process.send_signal(signal.SIGTERM)
            frames = await bridge.rest()
            codes.append(await bridge.exit_code())
        assert frames[-1]["type"] == "session.closed"
        assert_valid_stream(frames)
    assert codes == [128 + signal.SIGTERM] * 2


async def test_a_server_told_to_stop_lets_its_sessions_finish_and_a_fresh_one_takes_over(
    tmp_path: Path, warm: WarmServers
) -> None:
    async with warm.idle_session(tmp_path) as (bridge, server):
        server.terminate()
        frames = await one_turn(bridge)  # the session goes on to its end
        assert await bridge.exit_code() == 0
    assert frames[-1]["type"] == "session.closed"
    _, alive = psutil.wait_procs([server], timeout=WAIT)
    assert alive == []  # gone once its session ended
    start_whole(process_args(tmp_path), env=warm.env, cwd=tmp_path)
    assert len(warm.started()) == 2
    assert "signalled; stepping down" in warm.log()


async def test_a_launcher_killed_outright_ends_its_session_and_leaves_no_process(
    tmp_path: Path, warm: WarmServers
) -> None:
    async with warm.idle_session(tmp_path) as (bridge, server):
        session = server.children()
        left = [*session, *(p for s in session for p in s.children(recursive=True))]
        assert left, "the session's process and its agent run under the server"
        bridge.process.kill()
        frames = await bridge.rest()  # the session's process still has the Master's stdout
    assert frames[-1]["type"] == "session.closed"
    assert_valid_stream(frames)
    _, alive = psutil.wait_procs(left, timeout=WAIT)
    assert alive == []


async def test_a_session_process_that_dies_by_a_signal_takes_its_launcher_the_same_way(
    tmp_path: Path, warm: WarmServers
) -> None:
    async with warm.idle_session(tmp_path) as (bridge, server):
        (session,) = server.children()
        session.kill()
        assert await bridge.exit_code() == -signal.SIGKILL


def test_bad_arguments_fail_as_they_fail_cold(tmp_path: Path, warm: WarmServers) -> None:
    results = []
    for flags in (["--warm"], []):
        done = start([*flags, "--adapter", "no-such-adapter"], env=warm.env, cwd=tmp_path)
        results.append((done.returncode, done.stdout, done.stderr.decode()))
    assert results[0] == results[1]
    assert results[0][0] == 2
    assert "no-such-adapter" in results[0][2]


def test_a_server_whose_code_changed_on_disk_steps_down_for_a_fresh_one(
    tmp_path: Path, warm: WarmServers
) -> None:
    plugins = tmp_path / "on-sys-path"
    plugins.mkdir()
    env = dict(
        warm.env, PYTHONPATH=os.pathsep.join([str(plugins), os.environ.get("PYTHONPATH", "")])
    )

    start_whole(process_args(tmp_path), env=env, cwd=tmp_path)
    (plugins / "output.txt").write_text("")  # a directory on sys.path may be a workspace
    start_whole(process_args(tmp_path), env=env, cwd=tmp_path)
    assert len(warm.started()) == 1
    (plugins / "rawp_new_plugin-1.0.dist-info").mkdir()  # as installing one does
    start_whole(process_args(tmp_path), env=env, cwd=tmp_path)
    assert len(warm.started()) == 2, warm.log()
    assert f"{plugins} changed on disk; stepping down" in warm.log()


def test_starts_that_come_together_share_the_one_server_they_start(
    tmp_path: Path, warm: WarmServers
) -> None:
    launches = [
        subprocess.Popen(
            [*COMMAND, "serve", "--stdio", *process_args(tmp_path)],
            env=warm.env,
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(6)
    ]
    for launch in launches:
        stdout, stderr = launch.communicate(timeout=WAIT * 2)
        assert launch.returncode == 0, stderr.decode()
        assert b"starting cold" not in stderr
        assert frames_of(stdout)[-1]["type"] == "session.closed"
    assert len(warm.started()) == 1, warm.log()


def test_an_idle_server_exits(tmp_path: Path, warm: WarmServers) -> None:
    env = dict(warm.env, RAWP_ADAPTERS_WARM_IDLE_S="0.5")
    start_whole(process_args(tmp_path), env=env, cwd=tmp_path)
    (server,) = warm.started()
    try:
        _, alive = psutil.wait_procs([psutil.Process(server)], timeout=WAIT)
    except psutil.NoSuchProcess:
        alive = []
    assert alive == []
    assert "idle; exiting" in warm.log()


def test_a_bad_start_on_the_servers_socket_is_refused_and_the_server_goes_on(
    tmp_path: Path, warm: WarmServers
) -> None:
    start_whole(process_args(tmp_path), env=warm.env, cwd=tmp_path)
    (sock,) = warm.where.glob("*.sock")
    for bad in (b"\xff\xff\xff\xff", b"\x00\x00\x00\x05junk!", b"\x00\x00"):
        with socket.socket(socket.AF_UNIX) as hostile:
            hostile.settimeout(WAIT)
            hostile.connect(str(sock))
            hostile.sendall(bad)
            hostile.shutdown(socket.SHUT_WR)
            assert hostile.recv(100) == b""  # closed on it, nothing forked
    start_whole(process_args(tmp_path), env=warm.env, cwd=tmp_path)
    assert len(warm.started()) == 1
    assert warm.log().count("a start that could not be read") == 3


def test_a_socket_directory_deeper_than_a_socket_address_holds_still_serves(
    tmp_path: Path,
) -> None:
    deep = tmp_path.joinpath(*["a-directory-name-of-some-length"] * 4)
    deep.mkdir(parents=True, mode=0o700)
    servers = WarmServers(deep)
    try:
        assert len(str(deep / "warm-0123456789ab.sock")) > 108
        start_whole(process_args(tmp_path), env=servers.env, cwd=tmp_path)
        start_whole(process_args(tmp_path), env=servers.env, cwd=tmp_path)
        assert len(servers.started()) == 1
    finally:
        servers.stop()


def test_warm_goes_with_stdio_only(tmp_path: Path, warm: WarmServers) -> None:
    listen = [*COMMAND, "serve", "--warm", "--listen", str(tmp_path / "s.sock")]
    done = subprocess.run(listen, env=warm.env, capture_output=True, timeout=WAIT)
    assert done.returncode == 2
    assert b"--warm goes with --stdio" in done.stderr


def test_the_launcher_imports_none_of_what_a_cold_bridge_pays_for() -> None:
    listed = subprocess.run(
        [sys.executable, "-c", "import sys, rawp_adapters._warm._launch; print(*sys.modules)"],
        capture_output=True,
        check=True,
        timeout=WAIT,
    )
    modules = set(listed.stdout.decode().split())
    assert modules.isdisjoint(
        {"pydantic", "anyio", "typing", "json", "pathlib", "re", "enum", "selectors"}
    )
