"""Process trees and marked processes, read with psutil, and killing them."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from contextlib import suppress

import anyio.to_thread
import psutil

KILL_WAIT_S = 5.0
"""Default bound on waiting for SIGKILLed processes to disappear."""
CREATED_SLACK_S = 1.0
"""Seconds before a watched process's start that still count when looking for marked
processes (creation times are rounded; older processes cannot be its descendants)."""
KILL_POLL_S = 0.01
"""How often a kill is checked for having taken effect."""

Marker = tuple[str, str]
"""An environment variable and the value that marks a process, e.g. the session id."""


def snapshot_tree(pid: int) -> list[psutil.Process]:
    """``pid`` and its descendants now (empty if it is gone)."""
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def running(proc: psutil.Process) -> bool:
    """Alive and not a zombie (an orphan's zombie lingers where init does not reap).

    psutil checks that the pid was not reused by another process since ``proc`` was made.
    """
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def marked_processes(marker: Marker, *, created_after: float = 0.0) -> list[psutil.Process]:
    """The running processes (not this one) whose environment has ``marker``.

    Only processes created at or after ``created_after`` (a ``time.time()`` value) are
    read. This reads all of /proc: call it from a worker thread in async code.
    """
    key, value = marker
    me = os.getpid()
    found = []
    for proc in psutil.process_iter(["create_time"]):
        if proc.pid == me or (proc.info["create_time"] or 0) < created_after:
            continue
        try:
            if proc.environ().get(key) == value and running(proc):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def _kill_and_wait_blocking(
    procs: Sequence[psutil.Process], timeout: float
) -> list[psutil.Process]:
    for proc in procs:
        with suppress(psutil.Error):
            proc.kill()  # psutil checks the pid was not reused before signalling
    deadline = time.monotonic() + timeout
    alive = list(procs)
    while alive := [p for p in alive if running(p)]:
        if time.monotonic() >= deadline:
            break
        time.sleep(KILL_POLL_S)  # in a worker thread; nothing signals a non-child's end
    return alive


async def kill_and_wait(
    procs: Sequence[psutil.Process], *, timeout: float = KILL_WAIT_S
) -> list[int]:
    """SIGKILL every process of a snapshot still running and wait until they are gone
    (in a worker thread, at most ``timeout`` seconds); the pids that survived."""
    targets = [p for p in procs if running(p)]
    if not targets:
        return []
    alive = await anyio.to_thread.run_sync(_kill_and_wait_blocking, targets, timeout)
    return [p.pid for p in alive]
