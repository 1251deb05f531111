"""The warm server: imports the bridge once, then forks a session's process for each
launcher that connects, and tells the launcher that process's pid and, when it ends,
its wait status.

``python -m rawp_adapters._warm._server DIR KEY FD SYS_PATH...``, started by a launcher,
detached; it writes ``listening`` (or ``taken``) to the descriptor FD once up. One
server per key: it holds ``warm-KEY.lock`` for its life, and a second one started
meanwhile says ``taken`` and exits. It stays single-threaded (it forks), exits after
``RAWP_ADAPTERS_WARM_IDLE_S`` seconds with no session (at least ``START_WAIT_S`` before
its first: the launcher that started it is on its way), and steps down (no longer
listens, lets go of the lock, exits once its sessions have ended) when a module it
loaded, or a directory on ``sys.path``, has changed on disk, or on SIGTERM, SIGINT or
SIGHUP: a launcher then starts a fresh server.
"""

from __future__ import annotations

import array
import contextlib
import fcntl
import marshal
import os
import selectors
import signal
import socket
import sys
import threading
import time
from typing import Any

from rawp_adapters._warm._child import run_session
from rawp_adapters._warm._place import (
    HANDED_FDS,
    LENGTH,
    REFUSED_STALE,
    START_WAIT_S,
    idle_seconds,
    lock_path,
    socket_address,
    socket_path,
    unpack_length,
)
from rawp_adapters._warm._preload import CodeOnDisk, preload, preload_adapter

_STOPS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_LISTENER = object()
_SIGNALLED = object()
_REQUEST_KEYS = {"key", "argv", "env", "cwd", "umask", "limits", "launcher"}
_ACCEPT_TIMEOUT_S = 5.0
"""How long a connected launcher may take to send its start."""


def main() -> int:
    where, key, tell, *path = sys.argv[1:]
    sys.path[:] = path
    with open(int(tell), "wb") as launcher:  # says what came of the start, once
        lock = os.open(lock_path(where, key), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            launcher.write(b"taken\n")  # another server of this key is up, or starting
            return 0
        preload()
        listener = _listen(socket_address(socket_path(where, key)))
        server = _Server(key, lock, listener, CodeOnDisk())
        _log(f"listening at {socket_path(where, key)}")
        launcher.write(b"listening\n")
    server.run(idle_seconds())
    return 0


def _listen(path: str) -> socket.socket:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)  # a killed server's; this one holds the lock
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    umask = os.umask(0o177)
    try:
        listener.bind(path)
    finally:
        os.umask(umask)
    listener.listen(128)
    return listener


class _Server:
    def __init__(self, key: str, lock: int, listener: socket.socket, code: CodeOnDisk) -> None:
        self._key = key
        self._lock: int | None = lock
        self._listener: socket.socket | None = listener
        self._code = code
        self._selector = selectors.EpollSelector()
        self._selector.register(listener, selectors.EVENT_READ, _LISTENER)
        self._sessions: dict[int, tuple[int, socket.socket]] = {}
        """Each session's pidfd: its pid, and its launcher's connection."""
        # A stop signal makes the server step down (its sessions go on to their end):
        # the handler does nothing, the signal's byte on this pair wakes the loop.
        self._signalled, wakes = socket.socketpair()
        for end in (self._signalled, wakes):
            end.setblocking(False)
        self._selector.register(self._signalled, selectors.EVENT_READ, _SIGNALLED)
        self._wakes = wakes  # kept open: the interpreter writes to its descriptor
        signal.set_wakeup_fd(wakes.fileno(), warn_on_full_buffer=False)
        for signum in _STOPS:
            signal.signal(signum, lambda *_: None)

    def run(self, idle_s: float) -> None:
        idle_since, allowed = time.monotonic(), max(idle_s, START_WAIT_S)
        while self._listener is not None or self._sessions:
            wait = None if self._sessions else idle_since + allowed - time.monotonic()
            if wait is not None and wait <= 0:
                _log("idle; exiting")
                break
            busy = bool(self._sessions)
            for ready, _ in self._selector.select(wait):
                if ready.data is _LISTENER:
                    if self._listener is not None:
                        self._accept()
                elif ready.data is _SIGNALLED:
                    self._signalled.recv(64)
                    if self._listener is not None:
                        _log("signalled; stepping down")
                        self._step_down()
                elif ready.fd in self._sessions:
                    self._reap(ready.fd)
            if busy and not self._sessions:
                idle_since, allowed = time.monotonic(), idle_s
        self._step_down()

    def _accept(self) -> None:
        assert self._listener is not None
        connection, _ = self._listener.accept()
        try:
            request, fds = _receive(connection)
        except (OSError, ValueError, EOFError, TypeError) as exc:
            _log(f"a start that could not be read: {exc!r}")
            connection.close()
            return
        try:
            self._serve(connection, request, fds)
        finally:
            for fd in fds:
                os.close(fd)

    def _serve(self, connection: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
        if request.get("key") != self._key or len(fds) != len(HANDED_FDS):
            _refuse(connection, "a start for another installation or without its stdio")
            return
        changed = self._code.changed()
        if changed is not None:
            _log(f"{changed} changed on disk; stepping down")
            self._step_down()  # first: the refused launcher's next try must not reach it
            _refuse(connection, REFUSED_STALE)
            return
        # Held across the fork: one that reached the session's process before it has its
        # own handlers would run the server's (and wake the server, not end the session).
        signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
        try:
            pid = os.fork()
            if pid == 0:
                run_session(request, fds)  # unblocks them once the defaults are back
        except OSError as exc:  # out of processes or memory: the launcher starts cold
            _refuse(connection, f"cannot fork: {exc}")
            return
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPS)
        with contextlib.suppress(OSError):  # a launcher gone: its session notices, ends
            connection.sendall(b"pid %d\n" % pid)
        pidfd = os.pidfd_open(pid)
        self._sessions[pidfd] = (pid, connection)
        self._selector.register(pidfd, selectors.EVENT_READ)
        if preload_adapter(request["argv"]):
            self._code.add_loaded()
            if threading.active_count() > 1:
                _log("an adapter's import started a thread; forking it is unsafe: stepping down")
                self._step_down()

    def _reap(self, pidfd: int) -> None:
        pid, connection = self._sessions.pop(pidfd)
        self._selector.unregister(pidfd)
        os.close(pidfd)
        _, status = os.waitpid(pid, 0)
        with contextlib.suppress(OSError):
            connection.sendall(b"status %d\n" % status)
        connection.close()

    def _step_down(self) -> None:
        """Take no more sessions; a fresh server may start at once."""
        if self._listener is not None:
            self._selector.unregister(self._listener)
            path = self._listener.getsockname()
            with contextlib.suppress(OSError):
                if os.stat(path).st_ino == os.fstat(self._listener.fileno()).st_ino:
                    os.unlink(path)
            self._listener.close()
            self._listener = None
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None


def _receive(connection: socket.socket) -> tuple[dict[str, Any], list[int]]:
    """A launcher's start and the descriptors it came with (closed on any error)."""
    connection.settimeout(_ACCEPT_TIMEOUT_S)
    fds = array.array("i")
    head = b""
    try:
        while len(head) < LENGTH.size:
            data, ancillary, _, _ = connection.recvmsg(
                LENGTH.size - len(head), socket.CMSG_SPACE(len(HANDED_FDS) * fds.itemsize)
            )
            if not data:
                raise EOFError("the launcher closed before its start")
            head += data
            for level, kind, payload in ancillary:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
        body = bytearray()
        length = unpack_length(head)
        while len(body) < length:
            chunk = connection.recv(length - len(body))
            if not chunk:
                raise EOFError("the launcher closed in the middle of its start")
            body += chunk
        request = marshal.loads(bytes(body))
        if not (isinstance(request, dict) and request.keys() >= _REQUEST_KEYS):
            raise ValueError("a start without the launcher's keys")
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    connection.settimeout(None)
    return request, list(fds)


def _refuse(connection: socket.socket, reason: str) -> None:
    with contextlib.suppress(OSError):
        connection.sendall(f"refused {reason}\n".encode())
    connection.close()


def _log(message: str) -> None:
    sys.stderr.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} warm server {os.getpid()}: {message}\n")
    sys.stderr.flush()


if __name__ == "__main__":
    raise SystemExit(main())
