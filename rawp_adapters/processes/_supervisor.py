"""The one supervisor of a host process and the guards registered with it: what kills
the agents' processes should the host die without closing its sessions."""

from __future__ import annotations

import itertools
import json
import os
import select
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread
import psutil

from rawp_adapters._errors import GuardError
from rawp_adapters.processes._cgroup import SessionCgroup
from rawp_adapters.processes._supervisor_program import SUPERVISOR_PROGRAM
from rawp_adapters.processes._tree import CREATED_SLACK_S, KILL_WAIT_S, Marker

if TYPE_CHECKING:
    from structlog.stdlib import BoundLogger

ARM_TIMEOUT_S = 10.0
"""Bound on the watchdog's start."""


@dataclass(frozen=True, slots=True)
class _Watch:
    """One registration: what the supervisor is told, and the descriptors it holds."""

    entry: list[object]
    pipes: tuple[int, ...] = ()

    def line(self, key: str) -> bytes:
        return json.dumps(["watch", key, *self.entry, len(self.pipes)]).encode() + b"\n"


class _Supervisor:
    """The running supervisor process and the host's end of its socket (non-blocking):
    lines, and copies of descriptors passed along with them (``SCM_RIGHTS``)."""

    def __init__(self, popen: subprocess.Popen[bytes], channel: socket.socket) -> None:
        self.popen = popen
        self.channel = channel
        channel.setblocking(False)

    def try_send(self, line: bytes, pipes: Sequence[int] = ()) -> bool:
        """Send ``line`` (a short one: all of it or nothing) and ``pipes`` without
        blocking; False when the socket is full. ``OSError`` when the supervisor is gone."""
        try:
            socket.send_fds(self.channel, [line], list(pipes))
        except BlockingIOError:
            return False
        return True

    def send(self, line: bytes, pipes: Sequence[int] = ()) -> None:
        """Send ``line``, waiting (bounded) while the socket is full; in a worker thread."""
        deadline = time.monotonic() + ARM_TIMEOUT_S
        while not self.try_send(line, pipes):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise GuardError("the host's process supervisor does not read its socket")
            poll = select.poll()  # select() takes no descriptor above 1023
            poll.register(self.channel, select.POLLOUT)
            poll.poll(remaining * 1000)

    def close(self) -> None:
        self.channel.close()


class _HostSupervisor:
    """The one supervisor of this host process and what it watches (see
    :class:`ParentDeathGuard`). Thread-safe and independent of any event loop, so that
    every session of the process shares it whatever loop (or thread) runs it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._owner = os.getpid()
        self._process: _Supervisor | None = None
        self._watched: dict[str, _Watch] = {}
        """Every registration, by key: replayed to a new supervisor should the old one
        have gone."""
        self._keys = itertools.count()
        self.starts = 0
        """Supervisor processes started (for tests and benchmarks)."""

    @property
    def pid(self) -> int | None:
        """The running supervisor's pid (``None`` while none runs)."""
        process = self._process
        return process.popen.pid if process is not None else None

    def watching(self) -> int:
        return len(self._watched)

    def _adopt_fork(self) -> None:
        """In a forked child, forget the parent's supervisor and registrations."""
        if os.getpid() != self._owner:
            self._owner = os.getpid()
            self._process = None
            self._watched.clear()

    async def watch(self, entry: list[object], pipes: Sequence[int] = ()) -> tuple[str, int]:
        """Register ``entry`` (pid, started, since, cgroup, marker) and hand the
        supervisor copies of ``pipes``; its key and the supervisor's pid. Starts the
        supervisor when none runs."""
        key = f"{os.getpid()}-{next(self._keys)}"
        watch = _Watch(entry, tuple(pipes))
        line = watch.line(key)
        if self._lock.acquire(blocking=False):
            try:
                self._adopt_fork()
                process = self._process
                if process is not None and process.try_send(line, watch.pipes):
                    self._watched[key] = watch
                    return key, process.popen.pid
            except OSError:
                pass  # the supervisor is gone: start another one in a worker thread
            finally:
                self._lock.release()
        pid = await anyio.to_thread.run_sync(self._watch_blocking, key, watch)
        return key, pid

    def _watch_blocking(self, key: str, watch: _Watch) -> int:
        with self._lock:
            self._adopt_fork()
            self._watched[key] = watch
            try:
                return self._ensure_running_locked(watch.line(key), watch.pipes)
            except BaseException:
                self._watched.pop(key, None)
                raise

    def _ensure_running_locked(self, line: bytes, pipes: tuple[int, ...]) -> int:
        process = self._process
        if process is not None:
            try:
                process.send(line, pipes)
            except OSError:
                self._process = None  # gone (killed by someone): replaced below
                process.close()
                with suppress(subprocess.TimeoutExpired):
                    process.popen.wait(0)
            else:
                return process.popen.pid
        process = self._start_locked()
        try:
            for key, watched in self._watched.items():
                process.send(watched.line(key), watched.pipes)
        except OSError as exc:
            process.popen.kill()
            process.close()
            process.popen.wait()
            raise GuardError(f"the host's process supervisor went away: {exc}") from exc
        self._process = process
        return process.popen.pid

    def _start_locked(self) -> _Supervisor:
        psutil_dir = os.path.dirname(os.path.dirname(psutil.__file__))
        argv = [sys.executable, "-I", "-S", "-c", SUPERVISOR_PROGRAM, psutil_dir]
        channel, its_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            popen = subprocess.Popen(
                argv,
                stdin=its_end.fileno(),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except BaseException:
            channel.close()
            raise
        finally:
            its_end.close()
        self.starts += 1
        assert popen.stdout is not None
        assert popen.stderr is not None
        with popen.stdout, popen.stderr:
            poll = select.poll()  # select() takes no descriptor above 1023
            poll.register(popen.stdout, select.POLLIN)
            armed = popen.stdout.readline() if poll.poll(ARM_TIMEOUT_S * 1000) else b""
            if armed != b"armed\n":
                channel.close()
                if popen.poll() is None:
                    popen.kill()
                with suppress(subprocess.TimeoutExpired):
                    popen.wait(1)
                stderr = popen.stderr.read(4096) if popen.returncode is not None else b""
                detail = stderr.decode(errors="replace").strip() or "no answer"
                raise GuardError(
                    f"the parent-death guard ({sys.executable} -I -S) did not start: {detail}"
                )
        return _Supervisor(popen, channel)

    async def let_go_of_pipes(self, key: str) -> None:
        """Have the supervisor close its copies of ``key``'s pipes (the host is about to
        close its own: their ends are the host's doing from now on)."""
        line = json.dumps(["close", key]).encode() + b"\n"
        with self._lock:
            self._adopt_fork()
            watch = self._watched.get(key)
            if watch is None or not watch.pipes:
                return
            self._watched[key] = _Watch(watch.entry)  # a new supervisor gets no copies
            process = self._process
            if process is None:
                return
            try:
                sent = process.try_send(line)
            except OSError:
                return  # gone: its copies with it
        if not sent:
            with suppress(OSError, GuardError):
                await anyio.to_thread.run_sync(self._send_blocking, process, line)

    async def release(self, key: str) -> bool:
        """Forget ``key``; False when the supervisor was already gone. With nothing left
        to watch, the supervisor is let go (end of file, nothing to kill) and reaped."""
        line = json.dumps(["release", key]).encode() + b"\n"
        with self._lock:
            self._adopt_fork()
            if self._watched.pop(key, None) is None:
                return True
            process = self._process
            if process is None:
                return False
            last = not self._watched
            if last:
                self._process = None
            try:
                sent: bool | None = process.try_send(line)
            except OSError:
                sent = None
        if sent is False:
            try:
                await anyio.to_thread.run_sync(self._send_blocking, process, line)
            except (OSError, GuardError):
                sent = None
        if last:
            process.close()
            await anyio.to_thread.run_sync(self._reap, process.popen)
        return sent is not None

    def _send_blocking(self, process: _Supervisor, line: bytes) -> None:
        with self._lock:
            process.send(line)

    @staticmethod
    def _reap(popen: subprocess.Popen[bytes]) -> bool:
        try:
            return popen.wait(KILL_WAIT_S) == 0
        except subprocess.TimeoutExpired:
            popen.kill()
            popen.wait()
            return False

    def _abandon(self) -> subprocess.Popen[bytes] | None:
        """Close the pipe without releasing anything, as the host's death would, and
        forget the supervisor and its registrations (for tests)."""
        with self._lock:
            process, self._process = self._process, None
            self._watched.clear()
        if process is None:
            return None
        process.close()
        return process.popen


_host_supervisor = _HostSupervisor()


def host_supervisor() -> _HostSupervisor:
    """This process's supervisor (see :class:`ParentDeathGuard`)."""
    return _host_supervisor


class ParentDeathGuard:
    """Kills ``pid``'s cgroup, or its tree and the processes carrying ``marker``, if this
    process dies first (SIGKILL, crash) without :meth:`release`.

    Every guard of a host process is one registration with the same supervisor, a small
    Python process started with the first one and let go with the last: it blocks
    reading a socket only the host holds, and end-of-file means the host is gone. A
    session costs one line sent on that socket when it starts and one when it closes:
    no process, thread or /proc scan of its own.

    The supervisor also holds copies of the host's ends of the agent's pipes (``pipes``)
    until :meth:`let_go_of_pipes` or :meth:`release`: an agent that exits when its stdin
    ends (or its stdout breaks) cannot notice the host's death before the supervisor has
    stopped it, and so cannot hand the orphans it adopted as a subreaper on to init.
    """

    def __init__(self, key: str, pid: int) -> None:
        self._key = key
        self._pid = pid
        self._released = False

    @property
    def pid(self) -> int:
        """The supervisor's pid (shared by every session of this host)."""
        return self._pid

    @classmethod
    async def start(
        cls,
        pid: int,
        *,
        marker: Marker | None = None,
        cgroup: SessionCgroup | None = None,
        pipes: Sequence[int] = (),
    ) -> ParentDeathGuard:
        """Register ``pid`` with the host's supervisor (started when none runs, and
        waited for until it watches). With ``cgroup`` (which holds ``pid``) the cgroup is
        killed and removed; otherwise ``pid``'s tree and the processes carrying ``marker``.
        The supervisor holds a copy of each of ``pipes`` (the host's ends of the agent's
        pipes, kept open by the host until :meth:`let_go_of_pipes` or :meth:`release`).

        Raises ``GuardError`` (or ``OSError``) if the supervisor cannot start, and
        ``psutil.NoSuchProcess`` if ``pid`` is already gone.
        """
        started = psutil.Process(pid).create_time()
        entry: list[object] = [pid, started, started - CREATED_SLACK_S]
        entry.append(str(cgroup.path) if cgroup is not None else "")
        entry.append(list(marker) if marker is not None else None)
        key, supervisor = await _host_supervisor.watch(entry, pipes)
        return cls(key, supervisor)

    async def let_go_of_pipes(self) -> None:
        """Have the supervisor close its copies of the pipes: call it before the host
        closes the agent's stdin, so that the agent sees its end."""
        if not self._released:
            await _host_supervisor.let_go_of_pipes(self._key)

    async def release(self, log: BoundLogger) -> None:
        """Stand down (the session closed normally)."""
        if self._released:
            return
        self._released = True
        with anyio.CancelScope(shield=True):
            if not await _host_supervisor.release(self._key):
                log.warning("the host's process supervisor was already gone", pid=self._pid)
