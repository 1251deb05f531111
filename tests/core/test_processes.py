"""rawp_adapters.processes on real processes: tree cleanup, marked processes and the
parent-death guard."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import psutil
import pytest
from anyio.abc import Process

from rawp_adapters._logging import get_logger
from rawp_adapters.processes import (
    GuardError,
    ParentDeathGuard,
    kill_and_wait,
    marked_processes,
    running,
    snapshot_tree,
)
from tests.support.processes import alive, wait_gone

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
    guard = await ParentDeathGuard.start(parent.pid)
    try:
        # What the kernel does when the host dies: the guard's stdin reaches its end.
        assert guard._process.stdin is not None
        await guard._process.stdin.aclose()
        with anyio.fail_after(10):
            await guard._process.wait()
            await parent.wait()
        await wait_gone([p.pid for p in tree], timeout=10)
    finally:
        await kill_and_wait(tree)


async def test_the_guard_kills_the_marked_processes_too_when_its_host_goes_away() -> None:
    marker = a_marker()
    parent, tree = await start_tree()
    try:
        async with marked_sleeper(marker) as marked, marked_sleeper(a_marker()) as unmarked:
            guard = await ParentDeathGuard.start(parent.pid, marker=marker)
            assert guard._process.stdin is not None
            await guard._process.stdin.aclose()
            with anyio.fail_after(10):
                await guard._process.wait()
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
            await guard.release(get_logger("test"))
            assert guard._process.returncode == 0
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
