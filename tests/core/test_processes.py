"""rawp_adapters.processes on real processes: tree cleanup, marked processes,
confinement (a cgroup of the agent's own, else a child subreaper) and the parent-death
guard."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import psutil
import pytest
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from rawp_adapters._logging import get_logger
from rawp_adapters.processes import (
    CONTAINMENT_VAR,
    Confinement,
    GuardError,
    ParentDeathGuard,
    host_supervisor,
    kill_and_wait,
    marked_processes,
    open_confined_process,
    running,
    snapshot_tree,
)
from tests.support.processes import alive, needs_cgroups, wait_gone

pytestmark = pytest.mark.anyio

# A parent that starts a child and both sleep: a stand-in for a CLI running a tool.
PARENT_WITH_CHILD = (
    "import subprocess, sys, time\n"
    "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
    "print(child.pid, flush=True)\n"
    "time.sleep(600)\n"
)


async def start_tree() -> tuple[Process, list[psutil.Process]]:
    parent = await anyio.open_process(
        [sys.executable, "-c", PARENT_WITH_CHILD], stdout=subprocess.PIPE
    )
    assert parent.stdout is not None
    with anyio.fail_after(10):
        await parent.stdout.receive()  # the child's pid: it has started
    tree = snapshot_tree(parent.pid)
    assert len(tree) == 2
    return parent, tree


@asynccontextmanager
async def marked_sleeper(marker: tuple[str, str]) -> AsyncIterator[Process]:
    """A process in a session of its own (outside any tree) whose environment has
    ``marker``, like a tool process an agent started and left behind."""
    key, value = marker
    process = await anyio.open_process(
        [sys.executable, "-c", "print(flush=True); import time; time.sleep(600)"],
        stdout=subprocess.PIPE,
        env={**os.environ, key: value},
        start_new_session=True,
    )
    assert process.stdout is not None
    try:
        with anyio.fail_after(10):
            await process.stdout.receive()  # it runs with its environment set
        yield process
    finally:
        with anyio.CancelScope(shield=True):
            if process.returncode is None:
                process.kill()
            await process.wait()
            await process.aclose()


def a_marker() -> tuple[str, str]:
    return ("RAWP_TEST_MARKER", uuid.uuid4().hex)


async def host_dies() -> None:
    """What the kernel does to the supervisor when the host dies: its pipe reaches its
    end with every registration still in place. Waits until the supervisor has exited."""
    supervisor = host_supervisor()._abandon()
    assert supervisor is not None
    with anyio.fail_after(10):
        await anyio.to_thread.run_sync(supervisor.wait)


@pytest.fixture(autouse=True)
def no_supervisor_left() -> Iterator[None]:
    """Each test starts and ends without a supervisor (its sessions or guards closed)."""
    assert host_supervisor().pid is None
    yield
    assert host_supervisor().pid is None


async def test_kill_and_wait_kills_a_process_and_its_children() -> None:
    parent, tree = await start_tree()
    assert await kill_and_wait(tree) == []
    await parent.wait()
    assert not any(alive(p.pid) for p in tree)
    assert not any(running(p) for p in tree)
    assert await kill_and_wait(tree) == []


async def test_marked_processes_finds_exactly_the_processes_carrying_the_marker() -> None:
    marker = a_marker()
    parent, tree = await start_tree()
    try:
        async with marked_sleeper(marker) as marked, marked_sleeper(a_marker()):
            found = await anyio.to_thread.run_sync(marked_processes, marker)
            assert [p.pid for p in found] == [marked.pid]
            assert all(running(p) for p in found)
    finally:
        await kill_and_wait(tree)
        await parent.wait()


async def test_marked_processes_skips_processes_created_before_the_given_moment() -> None:
    marker = a_marker()
    async with marked_sleeper(marker) as marked:
        created = psutil.Process(marked.pid).create_time()
        assert await anyio.to_thread.run_sync(marked_processes, marker) != []
        later = await anyio.to_thread.run_sync(
            lambda: marked_processes(marker, created_after=created + 5)
        )
        assert later == []


async def test_the_guard_kills_the_tree_when_its_host_goes_away() -> None:
    parent, tree = await start_tree()
    await ParentDeathGuard.start(parent.pid)
    try:
        await host_dies()
        with anyio.fail_after(10):
            await parent.wait()
        await wait_gone([p.pid for p in tree], timeout=10)
    finally:
        await kill_and_wait(tree)


async def test_the_guard_kills_the_marked_processes_too_when_its_host_goes_away() -> None:
    marker = a_marker()
    parent, tree = await start_tree()
    try:
        async with marked_sleeper(marker) as marked, marked_sleeper(a_marker()) as unmarked:
            await ParentDeathGuard.start(parent.pid, marker=marker)
            await host_dies()
            with anyio.fail_after(10):
                await marked.wait()
                await parent.wait()
            await wait_gone([p.pid for p in tree], timeout=10)
            assert running(psutil.Process(unmarked.pid))
    finally:
        await kill_and_wait(tree)


async def test_a_released_guard_exits_and_leaves_the_processes_alone() -> None:
    marker = a_marker()
    parent, tree = await start_tree()
    try:
        async with marked_sleeper(marker) as marked:
            guard = await ParentDeathGuard.start(parent.pid, marker=marker)
            assert host_supervisor().pid == guard.pid
            await guard.release(get_logger("test"))
            assert host_supervisor().pid is None
            assert not alive(guard.pid)  # let go (nothing left to watch) and reaped
            assert all(running(p) for p in tree)
            assert running(psutil.Process(marked.pid))
    finally:
        await kill_and_wait(tree)
        await parent.wait()


async def test_a_guard_that_cannot_start_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    parent, tree = await start_tree()
    monkeypatch.setattr(sys, "executable", sys.executable + "-missing-interpreter")
    try:
        with pytest.raises((GuardError, OSError)):
            await ParentDeathGuard.start(parent.pid)
    finally:
        await kill_and_wait(tree)
        await parent.wait()


# ------------------------------------------------------------------ confinement

# Prints its pid, then starts a daemon that leaves its tree, session and environment
# (double fork, setsid, empty environment), prints the daemon's pid once it runs and its
# parent is gone, and waits for the end of its stdin.
DETACHES_A_DAEMON = (
    "import os, sys\n"
    "print(os.getpid(), flush=True)\n"
    "read, write = os.pipe()\n"
    "if os.fork() == 0:\n"
    "    os.setsid()\n"
    "    execed, exec_done = os.pipe()\n"
    "    pid = os.fork()\n"
    "    if pid == 0:\n"
    "        os.execve('/bin/sleep', ['sleep', '600'], {})\n"
    "    os.close(exec_done)\n"
    "    os.read(execed, 1)  # end of file: the exec closed the other end\n"
    "    os.write(write, str(pid).encode())\n"
    "    os._exit(0)\n"
    "os.close(write)\n"
    "daemon = os.read(read, 64).decode()\n"
    "os.wait()\n"
    "print(daemon, flush=True)\n"
    "sys.stdin.read()\n"
)


@asynccontextmanager
async def confined_daemon(
    tmp_path: Path, containment: str, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[Process, Confinement, psutil.Process]]:
    """A confined process that detached a daemon: the process, how it is confined and
    the daemon (all killed at the end, whatever happened)."""
    monkeypatch.setenv(CONTAINMENT_VAR, containment)
    argv = [sys.executable, "-c", DETACHES_A_DAEMON]
    process, confinement = await open_confined_process(
        argv, cwd=tmp_path, env=os.environ, name="test"
    )
    daemon = None
    try:
        assert process.stdout is not None
        lines = BufferedByteReceiveStream(process.stdout)
        with anyio.fail_after(10):
            assert int(await lines.receive_until(b"\n", 64)) == process.pid
            daemon = psutil.Process(int(await lines.receive_until(b"\n", 64)))
        assert daemon.environ() == {}
        assert os.getsid(daemon.pid) not in {os.getsid(process.pid), os.getsid(0)}
        yield process, confinement, daemon
    finally:
        with anyio.CancelScope(shield=True):
            await kill_and_wait([*snapshot_tree(process.pid), *([daemon] if daemon else [])])
            await process.wait()
            await process.aclose()
            if confinement.cgroup is not None:
                confinement.cgroup.remove()


@needs_cgroups
async def test_a_cgroup_holds_and_kills_a_daemon_that_left_every_other_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with confined_daemon(tmp_path, "cgroup", monkeypatch) as (process, confinement, daemon):
        cgroup = confinement.cgroup
        assert (confinement.mechanism, confinement.fallback_reason) == ("cgroup", None)
        assert cgroup is not None
        assert sorted(cgroup.pids()) == sorted([process.pid, daemon.pid])
        assert await cgroup.kill_and_wait() == []
        assert not running(daemon)
        assert not cgroup.populated()
        cgroup.remove()
        assert not cgroup.path.exists()


async def test_without_a_writable_cgroup_the_process_adopts_the_daemon_as_a_subreaper(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def read_only() -> Path:
        raise PermissionError(errno.EACCES, "read-only cgroup file system")

    monkeypatch.setattr("rawp_adapters.processes._cgroup._own_cgroup_dir", read_only)
    async with confined_daemon(tmp_path, "cgroup", monkeypatch) as (process, confinement, daemon):
        assert confinement.mechanism == "subreaper"
        assert "read-only cgroup file system" in (confinement.fallback_reason or "")
        assert daemon.ppid() == process.pid
        assert daemon in snapshot_tree(process.pid)


async def test_a_subreaper_agent_runs_with_no_signal_ignored_that_a_plain_child_has(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def ignored_signals(pid: int) -> str:
        status = Path(f"/proc/{pid}/status").read_text()
        return next(line for line in status.splitlines() if line.startswith("SigIgn:"))

    async with (
        confined_daemon(tmp_path, "subreaper", monkeypatch) as (process, _, _),
        confined_daemon(tmp_path, "tree-snapshot", monkeypatch) as (plain, plain_confinement, _),
    ):
        assert plain_confinement.mechanism == "tree-snapshot"
        assert ignored_signals(process.pid) == ignored_signals(plain.pid)


@pytest.mark.parametrize("containment", ["cgroup", "subreaper"])
async def test_a_missing_program_fails_before_any_wrapper_or_cgroup_is_made(
    containment: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CONTAINMENT_VAR, containment)
    before = set(psutil.Process().children())
    with pytest.raises(FileNotFoundError, match="no-such-agent"):
        await open_confined_process(
            ["no-such-agent"], cwd=tmp_path, env={"PATH": str(tmp_path)}, name="test"
        )
    assert set(psutil.Process().children()) == before


async def test_an_unknown_containment_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CONTAINMENT_VAR, "jail")
    with pytest.raises(ValueError, match="RAWP_CONTAINMENT='jail'"):
        await open_confined_process(["true"], cwd=tmp_path, env=os.environ, name="test")


@needs_cgroups
async def test_the_guard_kills_and_removes_the_cgroup_when_its_host_goes_away(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with confined_daemon(tmp_path, "cgroup", monkeypatch) as (process, confinement, daemon):
        assert confinement.cgroup is not None
        await ParentDeathGuard.start(process.pid, cgroup=confinement.cgroup)
        await host_dies()
        with anyio.fail_after(10):
            await process.wait()
        assert not running(daemon)
        assert not confinement.cgroup.path.exists()


async def test_the_guard_kills_the_daemon_a_subreaper_adopted_when_its_host_goes_away(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with confined_daemon(tmp_path, "subreaper", monkeypatch) as (process, _, daemon):
        await ParentDeathGuard.start(process.pid)
        await host_dies()
        with anyio.fail_after(10):
            await process.wait()
        await wait_gone([daemon.pid], timeout=10)


async def test_one_supervisor_watches_every_guarded_process_of_a_host() -> None:
    log = get_logger("test")
    trees = [await start_tree() for _ in range(3)]
    starts = host_supervisor().starts
    try:
        guards = [await ParentDeathGuard.start(parent.pid) for parent, _ in trees]
        assert {guard.pid for guard in guards} == {host_supervisor().pid}
        assert host_supervisor().starts == starts + 1
        assert host_supervisor().watching() == 3
        await guards[0].release(log)
        assert host_supervisor().watching() == 2
        assert alive(guards[0].pid), "the others are still watched"
        for guard in guards[1:]:
            await guard.release(log)
        assert not alive(guards[0].pid)
        assert all(running(p) for _, tree in trees for p in tree)
    finally:
        for parent, tree in trees:
            await kill_and_wait(tree)
            await parent.wait()


async def test_when_its_host_dies_the_supervisor_kills_only_what_is_still_watched() -> None:
    log = get_logger("test")
    (kept, kept_tree), (doomed, doomed_tree) = await start_tree(), await start_tree()
    try:
        released = await ParentDeathGuard.start(kept.pid)
        await ParentDeathGuard.start(doomed.pid)
        await released.release(log)
        await host_dies()
        with anyio.fail_after(10):
            await doomed.wait()
        await wait_gone([p.pid for p in doomed_tree], timeout=10)
        assert all(running(p) for p in kept_tree)
    finally:
        for parent, tree in ((kept, kept_tree), (doomed, doomed_tree)):
            await kill_and_wait(tree)
            await parent.wait()


async def test_a_supervisor_killed_by_someone_else_is_replaced_and_told_everything_watched() -> (
    None
):
    log = get_logger("test")
    (first, first_tree), (second, second_tree) = await start_tree(), await start_tree()
    try:
        guard = await ParentDeathGuard.start(first.pid)
        gone = psutil.Process(guard.pid)
        gone.kill()
        gone.wait(10)
        replacement = await ParentDeathGuard.start(second.pid)
        assert replacement.pid != guard.pid
        assert host_supervisor().watching() == 2
        await host_dies()
        with anyio.fail_after(10):
            await first.wait()
            await second.wait()
        await wait_gone([p.pid for p in [*first_tree, *second_tree]], timeout=10)
        await guard.release(log)  # its registration went with the host's "death"
    finally:
        for parent, tree in ((first, first_tree), (second, second_tree)):
            await kill_and_wait(tree)
            await parent.wait()
