"""Making sure an agent process, and everything it started, dies with its session.

For adapters that run agents as OS processes (ours and third-party ones):

- :func:`snapshot_tree`: a process and its descendants, taken while it is alive
  (the children of a dead process are re-parented and cannot be found any more).
- :func:`running`: alive and not a zombie.
- :func:`kill_and_wait`: SIGKILL a snapshot and wait, bounded, until it is gone.
- :func:`marked_processes`: the processes whose environment carries a marker such
  as ``RAWP_SESSION_ID=<id>``; this finds tool processes an agent started in
  sessions of their own that were re-parented to init when their parent exited.
- :class:`ParentDeathGuard`: a tiny watchdog process that kills a process's tree,
  and every process carrying the marker, if the host dies without closing the
  session (SIGKILL, crash). It blocks reading a pipe only the host holds;
  end-of-file without a "release" first means the host is gone.
  ``prctl(PR_SET_PDEATHSIG)`` would be lighter but fires when the spawning *thread*
  exits, and trio spawns from worker threads that exit when idle; SDKs that spawn
  the agent themselves also have no pre-exec hook to set it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Sequence
from contextlib import suppress

import anyio
import anyio.to_thread
import psutil
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream
from structlog.stdlib import BoundLogger

__all__ = [
    "ARM_TIMEOUT_S",
    "CREATED_SLACK_S",
    "KILL_WAIT_S",
    "GuardError",
    "Marker",
    "ParentDeathGuard",
    "kill_and_wait",
    "marked_processes",
    "running",
    "snapshot_tree",
]

KILL_WAIT_S = 5.0
"""Default bound on waiting for SIGKILLed processes to disappear."""
ARM_TIMEOUT_S = 10.0
"""Bound on the watchdog's start."""
CREATED_SLACK_S = 1.0
"""Seconds before a watched process's start that still count when looking for marked
processes (creation times are rounded; older processes cannot be its descendants)."""
_KILL_POLL_S = 0.01

Marker = tuple[str, str]
"""An environment variable and the value that marks a process, e.g. the session id."""


class GuardError(RuntimeError):
    """The parent-death guard could not be started."""


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
        time.sleep(_KILL_POLL_S)  # in a worker thread; nothing signals a non-child's end
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


_RELEASE = b"release\n"

# Runs with ``python -I -c``: only the standard library and psutil (installed beside
# the interpreter with this package). Importing psutil takes longer than starting
# Python, so it is imported just after "armed" (the session's start need not wait for
# it) but before the wait, so that the kill follows the host's death at once. The
# marked processes are searched a few times: one may start another while they die.
_GUARD_PROGRAM = r"""
import importlib.util, os, signal, sys
if importlib.util.find_spec("psutil") is None:
    sys.exit("psutil cannot be imported by " + sys.executable + " -I")
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGHUP, signal.SIG_IGN)
pid, started, since = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
marker = tuple(sys.argv[4:6])
sys.stdout.write("armed\n")
sys.stdout.close()
os.dup2(os.open(os.devnull, os.O_WRONLY), 2)  # the host stops reading stderr now
import psutil
seen = b""
while True:
    chunk = os.read(0, 64)
    if not chunk:
        break
    seen += chunk
    if b"release" in seen:
        sys.exit(0)

def kill(procs):
    for proc in procs:
        try:
            proc.kill()
        except psutil.Error:
            pass

def marked():
    found = []
    for proc in psutil.process_iter(["create_time"]):
        if proc.pid == os.getpid() or (proc.info["create_time"] or 0) < since:
            continue
        try:
            if proc.environ().get(marker[0]) == marker[1]:
                if proc.status() != psutil.STATUS_ZOMBIE:
                    found.append(proc)
        except psutil.Error:
            pass
    return found

try:
    root = psutil.Process(pid)
    if abs(root.create_time() - started) < 0.01:
        kill([root, *root.children(recursive=True)])
except psutil.Error:
    pass
for _ in range(3 if marker else 0):
    procs = marked()
    if not procs:
        break
    kill(procs)
"""


class ParentDeathGuard:
    """A watchdog process that kills ``pid``'s tree (and the processes carrying
    ``marker``) if this process dies first. Use :meth:`start`; :meth:`release` it
    when the session closes normally."""

    def __init__(self, process: Process) -> None:
        self._process = process

    @property
    def pid(self) -> int:
        return self._process.pid

    @classmethod
    async def start(cls, pid: int, *, marker: Marker | None = None) -> ParentDeathGuard:
        """Start the watchdog and wait until it watches.

        Raises ``GuardError`` (or ``OSError``) if it cannot start, and
        ``psutil.NoSuchProcess`` if ``pid`` is already gone.
        """
        started = psutil.Process(pid).create_time()
        argv = [sys.executable, "-I", "-c", _GUARD_PROGRAM, str(pid), repr(started)]
        argv.append(repr(started - CREATED_SLACK_S))
        if marker is not None:
            argv.extend(marker)
        process = await anyio.open_process(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        assert process.stdout is not None
        assert process.stderr is not None
        try:
            with anyio.fail_after(ARM_TIMEOUT_S):
                await BufferedByteReceiveStream(process.stdout).receive_until(b"armed\n", 64)
        except (TimeoutError, anyio.EndOfStream, anyio.IncompleteRead) as exc:
            with anyio.CancelScope(shield=True):
                if process.returncode is None:
                    process.kill()
                await process.wait()
                stderr = b""
                with anyio.move_on_after(1), suppress(anyio.EndOfStream):
                    stderr = await process.stderr.receive(4096)
            detail = stderr.decode(errors="replace").strip() or type(exc).__name__
            raise GuardError(
                f"the parent-death guard ({sys.executable} -I) did not start: {detail}"
            ) from exc
        finally:
            await process.stdout.aclose()
        await process.stderr.aclose()
        return cls(process)

    async def release(self, log: BoundLogger) -> None:
        """Stand the watchdog down (the session closed normally) and reap it."""
        process = self._process
        with anyio.CancelScope(shield=True):
            try:
                if process.stdin is not None:
                    await process.stdin.send(_RELEASE)
                    await process.stdin.aclose()
            except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                log.warning("the parent-death guard was already gone", pid=process.pid)
            with anyio.move_on_after(KILL_WAIT_S):
                await process.wait()
            if process.returncode is None:
                process.kill()
                await process.wait()
