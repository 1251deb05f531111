"""What a Master spawns for ``serve --stdio --warm``: hand the start to the
installation's warm server, then stand in for the session's process until it ends.

The point is not to pay the bridge's imports here, so this uses the interpreter's
built-in ``_socket`` and ``_signal`` rather than ``socket`` and ``signal`` (whose
``enum`` and ``selectors`` cost a start about 9 ms). SIGTERM, SIGHUP and SIGINT are
forwarded to the session's process (one that comes before it is forked, once it is);
the exit is the session's own: its code, or death by the same signal.
"""

from __future__ import annotations

import _socket
import marshal
import os
import resource
import sys
import time

from rawp_adapters._warm._place import (
    FDS,
    HANDED_FDS,
    LENGTH,
    LIMITS,
    REFUSED_STALE,
    START_WAIT_S,
    Refused,
    log_path,
    runtime_dir,
    server_key,
    socket_address,
    socket_path,
)

TYPE_CHECKING = False  # not typing's: importing typing costs this start milliseconds
if TYPE_CHECKING:
    import signal as _signal  # the same functions and numbers, with stubs
    from types import FrameType
    from typing import NoReturn
else:
    import _signal

FORWARDED = (_signal.SIGTERM, _signal.SIGHUP, _signal.SIGINT)
_POLL_S = 0.005
SERVER_ENV_PREFIXES = ("PYTHON", "LC_", "RAWP_ADAPTERS_WARM_")
SERVER_ENV = {"PATH", "HOME", "LANG", "TMPDIR", "VIRTUAL_ENV"}
_ABSENT = (FileNotFoundError, ConnectionRefusedError)


def launch(argv: list[str]) -> int | None:
    """Run ``rawp-adapters ARGV`` as a session of the warm server; the exit code. None
    when the warm path cannot take this start: the reason is on stderr, the
    launcher's stdin, stdout and signals are as they were, and the caller starts cold."""
    forwarder = _Forwarder()
    try:
        pid, connection = _handed_over(argv)
    except (Refused, OSError) as exc:  # the warm path never fails a start
        sys.stderr.write(f"rawp-adapters: --warm: {exc}; starting cold\n")
        forwarder.restore()
        return None
    try:
        return _stand_in(pid, connection, forwarder)
    finally:
        connection.close()


def _handed_over(argv: list[str]) -> tuple[int, _Connection]:
    """The session's pid and the connection its status comes on, from the server (a
    fresh one if the first stepped down)."""
    where = runtime_dir()
    key = server_key()
    for _ in range(2):
        connection = _Connection(_connected(where, key))
        try:
            pid = _hand_over(connection, argv, key)
        except BaseException:
            connection.close()
            raise
        if pid is not None:
            return pid, connection
        connection.close()
    raise Refused("a fresh warm server also stepped down")


def _connected(where: str, key: str) -> _socket.socket:
    """A connection to the warm server, started (and waited for) if none listens."""
    path = socket_address(socket_path(where, key))
    try:
        return _connect(path)
    except _ABSENT:
        pass
    if not _start_server(where, key):
        raise Refused(f"the warm server failed to start (see {log_path(where, key)})")
    deadline = time.monotonic() + START_WAIT_S
    while True:  # at once if ours listens; else another launcher's is starting
        try:
            return _connect(path)
        except _ABSENT:
            if time.monotonic() > deadline:
                raise Refused(f"no warm server listened within {START_WAIT_S:.0f} s") from None
            time.sleep(_POLL_S)


def _connect(path: str) -> _socket.socket:
    connection = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        connection.connect(path)
    except OSError:
        connection.close()
        raise
    return connection


def _start_server(where: str, key: str) -> str:
    """Start a server, detached (in a session of its own, no launcher's child); what it
    said once up: ``listening``, ``taken`` (another holds the key), or nothing if it
    ended first."""
    import subprocess

    told, tell = os.pipe()
    flags = subprocess._args_from_interpreter_flags()  # type: ignore[attr-defined]
    command = [sys.executable, *flags, "-m", "rawp_adapters._warm._server", where, key]
    command += [str(tell), *sys.path]
    log = os.open(log_path(where, key), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    null = os.open(os.devnull, os.O_RDWR)
    middle = os.fork()
    if middle == 0:
        _exec_detached(command, stdio=(null, null, log), keep=tell)
    for fd in (tell, log, null):
        os.close(fd)
    os.waitpid(middle, 0)
    with open(told, "rb") as said:
        return said.readline().decode(errors="replace").strip()


def _exec_detached(command: list[str], *, stdio: tuple[int, int, int], keep: int) -> NoReturn:
    """In a fork: fork again from a session of its own, exec ``command`` there (keeping
    the descriptor ``keep``), and exit, so that init, not a launcher, is its parent."""
    try:
        os.setsid()
        if os.fork() == 0:
            for target, fd in enumerate(stdio):
                os.dup2(fd, target)
            os.set_inheritable(keep, True)
            os.chdir("/")
            os.execve(command[0], command, _server_environment())
    finally:
        os._exit(0)


def _server_environment() -> dict[str, str]:
    """What the server is started with: what the interpreter and its locale read, not
    the launcher's credentials (each session gets its own launcher's environment)."""
    return {
        name: value
        for name, value in os.environ.items()
        if name.startswith(SERVER_ENV_PREFIXES) or name in SERVER_ENV
    }


class _Connection:
    """The launcher's end: what it sends, and the server's answer line by line."""

    def __init__(self, sock: _socket.socket) -> None:
        self._sock = sock
        self._pending = b""

    def send_start(self, request: bytes) -> None:
        """The start's length with stdin, stdout and stderr attached, then the start."""
        fds = [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, FDS.pack(*HANDED_FDS))]
        self._sock.sendmsg([LENGTH.pack(len(request))], fds)
        self._sock.sendall(request)

    def line(self) -> list[str]:
        """The server's next line, split in words (none at the end of the stream)."""
        while b"\n" not in self._pending:
            chunk = self._sock.recv(4096)
            if not chunk:
                return []
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line.decode(errors="replace").split(" ", 1)

    def close(self) -> None:
        self._sock.close()


def _hand_over(connection: _Connection, argv: list[str], key: str) -> int | None:
    """Send the start with stdin, stdout and stderr; the pid of the session's process,
    or None when the server stepped down first (its code changed on disk)."""
    umask = os.umask(0)
    os.umask(umask)
    try:
        cwd = os.getcwd()
    except OSError as exc:
        raise Refused(f"the working directory is gone: {exc}") from exc
    request = marshal.dumps(
        {
            "key": key,
            "argv": argv,
            "env": dict(os.environ),
            "cwd": cwd,
            "umask": umask,
            "limits": {limit: resource.getrlimit(limit) for limit in LIMITS},
            "launcher": os.getpid(),
        }
    )
    try:
        connection.send_start(request)
        first = connection.line()
    except OSError:
        return None  # closed while stepping down, before this start was read
    if first[:1] == ["pid"] and first[1:2] and first[1].isdigit():
        return int(first[1])
    if first[:1] == ["refused"] and first[1:] != [REFUSED_STALE]:
        raise Refused(f"the warm server refused: {' '.join(first[1:])}")
    return None


def _stand_in(pid: int, connection: _Connection, forwarder: _Forwarder) -> int:
    """Until the session's process ends: forward signals; then exit as it did."""
    forwarder.attach(pid)
    _let_go_of_stdio()
    try:
        line = connection.line()
    except OSError:
        line = []
    if line[:1] == ["status"] and line[1:2] and line[1].isdigit():
        return _exit_as(int(line[1]))
    sys.stderr.write(
        f"rawp-adapters: --warm: the warm server ended while session process {pid} ran; "
        "its exit code is lost\n"
    )
    _wait_gone(pid)
    return 1


def _let_go_of_stdio() -> None:
    """The session's process has the Master's stdin and stdout: this one keeps no copy,
    so the Master sees the end of stdout when that process ends it."""
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)


def _exit_as(status: int) -> int:
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        if signum not in (_signal.SIGKILL, _signal.SIGSTOP):  # the two with no handler
            _signal.signal(signum, _signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return 128 + signum
    return os.waitstatus_to_exitcode(status)


def _wait_gone(pid: int) -> None:
    import select

    try:
        watched = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    select.select([watched], [], [])
    os.close(watched)


class _Forwarder:
    """The launcher's stop signals, sent on to the session's process."""

    def __init__(self) -> None:
        self._pid: int | None = None
        self._pending: list[int] = []
        self._previous = {signum: _signal.getsignal(signum) for signum in FORWARDED}
        for signum in FORWARDED:
            _signal.signal(signum, self._on_signal)

    def attach(self, pid: int) -> None:
        self._pid = pid
        for signum in self._pending:
            self._send(signum)

    def restore(self) -> None:
        """Back to the signals' own handlers; one that came meanwhile is raised again."""
        for signum, handler in self._previous.items():
            _signal.signal(signum, handler)
        for pending in self._pending:
            _signal.raise_signal(pending)

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        if self._pid is None:
            self._pending.append(signum)
        else:
            self._send(signum)

    def _send(self, signum: int) -> None:
        assert self._pid is not None
        try:  # noqa: SIM105 (contextlib would cost this start its import)
            os.kill(self._pid, signum)
        except ProcessLookupError:
            pass
