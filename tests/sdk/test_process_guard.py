"""Process-tree cleanup and the parent-death guard, on real processes."""

from __future__ import annotations

import subprocess
import sys

import anyio
import psutil
import pytest
from anyio.abc import Process
from rawp_adapter_sdk._process_guard import (
    GuardError,
    ParentDeathGuard,
    kill_tree,
    snapshot_tree,
)

from rawp_adapters._logging import get_logger
from tests.sdk.processes import alive, wait_gone

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


async def test_kill_tree_kills_a_process_and_its_children() -> None:
    parent, tree = await start_tree()
    assert await kill_tree(tree) == []
    await parent.wait()
    assert not any(alive(p.pid) for p in tree)
    assert await kill_tree(tree) == []


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
        await kill_tree(tree)


async def test_a_released_guard_exits_and_leaves_the_process_alone() -> None:
    parent, tree = await start_tree()
    try:
        guard = await ParentDeathGuard.start(parent.pid)
        await guard.release(get_logger("test"))
        assert guard._process.returncode == 0
        assert all(p.is_running() for p in tree)
    finally:
        await kill_tree(tree)
        await parent.wait()


async def test_a_guard_that_cannot_start_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    parent, tree = await start_tree()
    monkeypatch.setattr(sys, "executable", sys.executable + "-missing-interpreter")
    try:
        with pytest.raises((GuardError, OSError)):
            await ParentDeathGuard.start(parent.pid)
    finally:
        await kill_tree(tree)
        await parent.wait()
