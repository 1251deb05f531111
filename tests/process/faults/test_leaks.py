"""Many sessions opened and closed leave no child processes and no file descriptors."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import psutil
import pytest

from rawp_adapters.frames import SessionCapabilitiesFrame
from rawp_adapters.testing import drive
from tests.process.helpers import fake_adapter

pytestmark = pytest.mark.anyio

SESSIONS = 200
PARALLEL = 4
FD_SLACK = 4
"""Descriptors the event loop may open lazily on first use (wakeup pipes, selectors)."""


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


async def open_and_close(workspace: Path) -> None:
    async with drive(fake_adapter(), workspace=workspace, timeout=15.0) as driver:
        capabilities = await driver.wait_for(SessionCapabilitiesFrame)
        assert capabilities.payload.adapter_type == "process"
        await driver.end()


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
async def test_many_sessions_opened_and_closed_leak_no_processes_or_descriptors(
    tmp_path: Path,
) -> None:
    await open_and_close(tmp_path)  # the event loop's own lazy resources
    fds_before = open_fds()

    async def worker(count: int) -> None:
        for _ in range(count):
            await open_and_close(tmp_path)

    async with anyio.create_task_group() as tg:
        for _ in range(PARALLEL):
            tg.start_soon(worker, SESSIONS // PARALLEL)

    assert psutil.Process().children(recursive=True) == []
    assert open_fds() <= fds_before + FD_SLACK
