"""Checking that processes are gone, for tests that start real ones."""

from __future__ import annotations

import uuid
from pathlib import Path

import anyio
import psutil
import pytest

from rawp_adapters.processes import SessionCgroup


def alive(pid: int) -> bool:
    """Running and not a zombie (an orphan's zombie stays where init does not reap)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


async def wait_gone(pids: list[int], timeout: float) -> None:
    """Wait until none of ``pids`` is alive; ``TimeoutError`` naming those still alive
    after ``timeout`` seconds."""
    with anyio.move_on_after(timeout):
        # Nothing signals "a process that is not our child is gone": poll, bounded.
        while any(alive(pid) for pid in pids):  # noqa: ASYNC110
            await anyio.sleep(0.02)
        return
    raise TimeoutError(f"still alive after {timeout:g} s: {_described(pids)}")


def _described(pids: list[int]) -> str:
    found = []
    for pid in pids:
        try:
            process = psutil.Process(pid)
            found.append(f"{pid} {process.status()} ppid={process.ppid()} {process.cmdline()[:3]}")
        except psutil.NoSuchProcess:
            continue
    return "; ".join(found)


def cgroup_directory() -> Path:
    """Where this process makes its agents' cgroups (``OSError`` where it cannot)."""
    probe = SessionCgroup.create(f"rawp-probe-{uuid.uuid4().hex}")
    probe.remove()
    return probe.path.parent


def cgroups_writable() -> bool:
    try:
        cgroup_directory()
    except OSError:
        return False
    return True


needs_cgroups = pytest.mark.skipif(not cgroups_writable(), reason="no writable cgroup v2")

CONTAINMENT_PARAMS = [pytest.param("cgroup", marks=needs_cgroups), "subreaper"]
"""The Linux containments to prove a guarantee with (cgroup only where it can be made)."""


def cgroup_of(pid: int) -> str:
    return Path(f"/proc/{pid}/cgroup").read_text().splitlines()[-1]


def agent_cgroup(pid: int) -> Path:
    """The directory of ``pid``'s cgroup, for a process of this one's or in an agent's."""
    directory = cgroup_directory()
    name = Path(cgroup_of(pid).removeprefix("0::")).name
    return directory if name == directory.name else directory / name
