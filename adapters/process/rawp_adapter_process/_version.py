"""Which version of the agent runs: ``<command> --version``, asked once per command line.

The xcsh ``ready`` frame names the version; omp's and pi's do not (pi has none), and
neither does their ``get_state``. So the agent's command line is run once more with
``--version`` (omp 18.2.3 prints ``18.2.3`` or ``omp/18.2.3``, pi ``0.73.1`` on
stderr), bounded in time, alongside the agent's start. A failure is no version, never a
failed session.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

import anyio

_VERSION = re.compile(rb"\b\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]+)?")
_MAX_OUTPUT = 4096
"""Bytes of the answer that are read; the rest is left unread."""

_known: dict[tuple[str, ...], str | None] = {}
"""Versions by command line, for the lifetime of the host (what a command runs does not
change under a host's feet often enough to ask again)."""
_asking: dict[tuple[str, ...], anyio.Event] = {}
"""The command lines being asked now: a session that starts meanwhile waits for that
answer instead of starting ``--version`` once more (a host opening many sessions at once
runs one)."""


def remember_version(argv: Sequence[str], version: str) -> None:
    """Note the version the agent's ``ready`` frame named, so that later sessions of the
    same command line need not ask (nor start a process to)."""
    _known[tuple(argv)] = version


async def agent_version(argv: Sequence[str], *, env: Mapping[str, str], cwd: Path) -> str | None:
    """The version ``argv + ["--version"]`` prints on stdout or stderr (``None`` if it
    prints none or fails). Cached per ``argv`` once it answered. The caller bounds the
    wait: cancelled, the command is killed (and asked again next time)."""
    key = tuple(argv)
    while key not in _known:
        asking = _asking.get(key)
        if asking is None:
            break
        await asking.wait()  # another session asks; if it is cancelled, ask in its stead
    if key in _known:
        return _known[key]
    _asking[key] = asking = anyio.Event()
    try:
        return await _ask(key, argv, env=env, cwd=cwd)
    finally:
        del _asking[key]
        asking.set()


async def _ask(
    key: tuple[str, ...], argv: Sequence[str], *, env: Mapping[str, str], cwd: Path
) -> str | None:
    try:
        process = await anyio.open_process(
            [*argv, "--version"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,  # pi prints its version on stderr
            cwd=cwd,
            env=dict(env),
            start_new_session=True,
        )
    except OSError:
        _known[key] = None
        return None
    output = bytearray()
    try:
        assert process.stdout is not None
        async for chunk in process.stdout:
            output += chunk
            if len(output) >= _MAX_OUTPUT:
                break
        await process.wait()
    finally:
        with anyio.CancelScope(shield=True):
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, signal.SIGKILL)
            await process.aclose()
    match = _VERSION.search(output) if process.returncode == 0 else None
    version = match.group().decode() if match is not None else None
    _known[key] = version
    return version
