"""Starting an agent confined: its own cgroup, else a child subreaper, else nothing more
than tree snapshots (see :func:`open_confined_process`)."""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
from anyio.abc import Process

from rawp_adapters._errors import InvalidSettingsError
from rawp_adapters._frames import Containment
from rawp_adapters.processes._cgroup import SessionCgroup

CONTAINMENTS: tuple[Containment, ...] = ("cgroup", "subreaper", "tree-snapshot")
"""Every mechanism, strongest first."""
CONTAINMENT_VAR = "RAWP_CONTAINMENT"
"""Environment variable naming the strongest mechanism a host may use."""

_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37


@functools.cache
def _subreaper_supported() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    flag = ctypes.c_int()
    libc = ctypes.CDLL(None, use_errno=True)
    return int(libc.prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0)) == 0


# Both wrappers replace themselves with the agent (same pid, pipes and session).
# The gate waits for one line on stdin: the host moves it into its cgroup first, so the
# agent's first instruction already runs confined. The subreaper wrapper restores the
# signals Python ignores (ignored signals survive exec) before it execs.
_GATE = 'IFS= read -r _ || exit 125; exec "$@"'
_SUBREAPER = f"""
import ctypes, os, signal, sys
if ctypes.CDLL(None, use_errno=True).prctl({_PR_SET_CHILD_SUBREAPER}, 1, 0, 0, 0) != 0:
    sys.exit("cannot become a child subreaper: " + os.strerror(ctypes.get_errno()))
signal.signal(signal.SIGPIPE, signal.SIG_DFL)
signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
os.execv(sys.argv[1], sys.argv[2:])
"""


@dataclass(frozen=True, slots=True)
class Confinement:
    """How one agent process is confined (see :func:`open_confined_process`)."""

    mechanism: Containment
    cgroup: SessionCgroup | None = None
    """The agent's own cgroup (mechanism ``cgroup``)."""
    fallback_reason: str | None = None
    """Why a stronger mechanism is not in use (``None`` when none was refused)."""


def _allowed_containments() -> tuple[Containment, ...]:
    """The mechanisms this host may use, strongest first (``RAWP_CONTAINMENT`` caps them)."""
    cap = os.environ.get(CONTAINMENT_VAR) or CONTAINMENTS[0]
    for index, mechanism in enumerate(CONTAINMENTS):
        if mechanism == cap:
            return CONTAINMENTS[index:]
    raise InvalidSettingsError(f"{CONTAINMENT_VAR}={cap!r} names none of {', '.join(CONTAINMENTS)}")


def _program(argv0: str, *, cwd: Path, env: Mapping[str, str]) -> str:
    """The absolute path ``argv0`` runs, found as ``subprocess`` would (a wrapper would
    only fail after the spawn); ``OSError`` as from ``subprocess`` when there is none."""
    if os.sep in argv0:
        path = str(cwd / argv0)
        if not os.access(path, os.X_OK) or os.path.isdir(path):
            code = errno.EACCES if os.path.exists(path) else errno.ENOENT
            raise OSError(code, os.strerror(code), argv0)
        return path
    found = shutil.which(argv0, path=env.get("PATH", os.defpath))
    if found is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), argv0)
    return str(cwd / found)


@dataclass(frozen=True, slots=True)
class _Stdio:
    """The agent's stdin, stdout and stderr: ``subprocess.PIPE`` or a descriptor; and
    the write end of its stdin when the caller made that pipe."""

    stdin: int
    stdout: int
    stderr: int
    stdin_write_end: int | None

    async def send_to_stdin(self, process: Process, data: bytes) -> None:
        if self.stdin_write_end is None:
            assert process.stdin is not None
            await process.stdin.send(data)
        else:
            os.write(self.stdin_write_end, data)  # a line into an empty pipe: never blocks


async def _open(argv: Sequence[str], cwd: Path, env: Mapping[str, str], stdio: _Stdio) -> Process:
    return await anyio.open_process(
        list(argv),
        stdin=stdio.stdin,
        stdout=stdio.stdout,
        stderr=stdio.stderr,
        cwd=cwd,
        env=dict(env),
        start_new_session=True,
    )


async def _open_in_cgroup(
    argv: Sequence[str],
    program: str,
    cwd: Path,
    env: Mapping[str, str],
    stdio: _Stdio,
    cgroup: SessionCgroup,
) -> Process:
    gate = ["/bin/sh", "-c", _GATE, "rawp-gate", program, *argv[1:]]
    process = await _open(gate, cwd, env, stdio)
    with anyio.CancelScope(shield=True):
        try:
            cgroup.admit(process.pid)
            await stdio.send_to_stdin(process, b"\n")
        except BaseException:
            process.kill()
            await process.wait()
            await process.aclose()
            raise
    return process


async def open_confined_process(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    name: str,
    stdin: tuple[int, int] | None = None,
    stdout: int = subprocess.PIPE,
    stderr: int = subprocess.PIPE,
) -> tuple[Process, Confinement]:
    """Start ``argv`` (pipes on stdin, stdout and stderr, in a new session) confined by
    the strongest mechanism available: its own cgroup v2 (called ``rawp-<name>-<n>``),
    else as a child subreaper, else nothing more than the tree snapshots. The caller may
    make the pipes instead: ``stdin`` the read and write ends of the agent's stdin (the
    agent gets the read end; the cgroup's gate may write one line to the write end
    before the agent runs), ``stdout`` and ``stderr`` the ends the agent writes to.

    Raises ``OSError`` when ``argv`` cannot be started, ``ValueError`` when
    ``RAWP_CONTAINMENT`` names no mechanism. Remove the cgroup when the agent is gone.
    """
    allowed = _allowed_containments()
    stdin_read, stdin_write = stdin or (subprocess.PIPE, None)
    stdio = _Stdio(stdin_read, stdout, stderr, stdin_write)
    if allowed[0] == "tree-snapshot":
        return await _open(argv, cwd, env, stdio), Confinement("tree-snapshot")
    program = _program(argv[0], cwd=cwd, env=env)
    refused: list[str] = []
    if "cgroup" in allowed:
        try:
            cgroup = SessionCgroup.create(f"rawp-{name}-{uuid.uuid4().hex[:8]}")
        except OSError as exc:
            refused.append(f"no cgroup: {exc}")
        else:
            try:
                process = await _open_in_cgroup(argv, program, cwd, env, stdio, cgroup)
            except OSError as exc:
                cgroup.remove()
                refused.append(f"cannot start in a cgroup: {exc}")
            else:
                return process, Confinement("cgroup", cgroup)
    if not _subreaper_supported():
        refused.append("no child subreaper on this system")
    else:
        wrapper = [sys.executable, "-I", "-S", "-c", _SUBREAPER, program, *argv]
        try:
            process = await _open(wrapper, cwd, env, stdio)
        except OSError as exc:
            refused.append(f"cannot start as a child subreaper: {exc}")
        else:
            return process, Confinement("subreaper", None, "; ".join(refused) or None)
    return await _open(argv, cwd, env, stdio), Confinement(
        "tree-snapshot", None, "; ".join(refused)
    )
