"""Checking that processes are gone, for tests that start real ones."""

from __future__ import annotations

import anyio
import psutil


def alive(pid: int) -> bool:
    """Running and not a zombie (an orphan's zombie stays where init does not reap)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


async def wait_gone(pids: list[int], timeout: float) -> None:
    """Wait until none of ``pids`` is alive; ``TimeoutError`` after ``timeout`` seconds."""
    with anyio.fail_after(timeout):
        # Nothing signals "a process that is not our child is gone": poll, bounded.
        while any(alive(pid) for pid in pids):  # noqa: ASYNC110
            await anyio.sleep(0.02)
