"""Making sure a process a core spawned (and everything it started) dies with the session.

- :func:`snapshot_tree` / :func:`kill_tree`: the process and its descendants, taken
  while it is alive (children of a dead process are re-parented and cannot be found
  any more), then killed and waited for.
- :class:`ParentDeathGuard`: a tiny watchdog process that kills the tree if the host
  process dies without closing the session (SIGKILL, crash). It blocks reading a pipe
  only the host holds; end-of-file without a "release" first means the host is gone.
  ``prctl(PR_SET_PDEATHSIG)`` would be lighter but fires when the spawning *thread*
  exits, and trio spawns from worker threads that exit when idle; the Claude SDK also
  has no pre-exec hook to set it.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Sequence
from contextlib import suppress

import anyio
import psutil
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream
from structlog.stdlib import BoundLogger

KILL_WAIT_S = 5.0
KILL_POLL_S = 0.01
ARM_TIMEOUT_S = 10.0


class GuardError(RuntimeError):
    """The parent-death guard could not be started."""


_RELEASE = b"release\n"

# Runs with ``python -I -c``: only the standard library and psutil (a dependency of
# this package, so installed beside the interpreter). psutil is imported up front so
# that the kill follows the host's death at once, before the orphan acts on its own.
_GUARD_PROGRAM = r"""
import os, signal, sys
import psutil
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGHUP, signal.SIG_IGN)
pid, started = int(sys.argv[1]), float(sys.argv[2])
sys.stdout.write("armed\n")
sys.stdout.close()
os.dup2(os.open(os.devnull, os.O_WRONLY), 2)  # the host stops reading stderr now
seen = b""
while True:
    chunk = os.read(0, 64)
    if not chunk:
        break
    seen += chunk
    if b"release" in seen:
        sys.exit(0)
try:
    root = psutil.Process(pid)
    if abs(root.create_time() - started) > 0.01:
        sys.exit(0)
    procs = [root, *root.children(recursive=True)]
except psutil.Error:
    sys.exit(0)
for proc in procs:
    try:
        proc.kill()
    except psutil.Error:
        pass
"""


def snapshot_tree(pid: int) -> list[psutil.Process]:
    """``pid`` and its descendants now (empty if it is gone)."""
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def _running(proc: psutil.Process) -> bool:
    """Alive and not a zombie (an orphan's zombie lingers where init does not reap)."""
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _kill_and_wait(procs: Sequence[psutil.Process], timeout: float) -> list[psutil.Process]:
    for proc in procs:
        with suppress(psutil.Error):
            proc.kill()  # psutil checks the pid was not reused before signalling
    deadline = time.monotonic() + timeout
    alive = list(procs)
    while alive := [p for p in alive if _running(p)]:
        if time.monotonic() >= deadline:
            break
        time.sleep(KILL_POLL_S)  # in a worker thread; nothing signals a non-child's end
    return alive


async def kill_tree(procs: Sequence[psutil.Process], *, timeout: float = KILL_WAIT_S) -> list[int]:
    """SIGKILL every process of a snapshot still running; the pids that survived."""
    running = [p for p in procs if _running(p)]
    if not running:
        return []
    alive = await anyio.to_thread.run_sync(_kill_and_wait, running, timeout)
    return [p.pid for p in alive]


class ParentDeathGuard:
    """A watchdog process that kills ``pid``'s tree if this process dies first."""

    def __init__(self, process: Process) -> None:
        self._process = process

    @property
    def pid(self) -> int:
        return self._process.pid

    @classmethod
    async def start(cls, pid: int) -> ParentDeathGuard:
        """Start the watchdog and wait until it watches; raise ``GuardError`` if it cannot."""
        started = psutil.Process(pid).create_time()
        process = await anyio.open_process(
            [sys.executable, "-I", "-c", _GUARD_PROGRAM, str(pid), repr(started)],
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
