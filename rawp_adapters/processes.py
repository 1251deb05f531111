"""Making sure an agent process, and everything it started, dies with its session.

For adapters that run agents as OS processes (ours and third-party ones):

- :func:`open_confined_process`: start the agent so that nothing it starts can leave
  its reach, with the strongest mechanism this host allows (its :class:`Confinement`
  says which; log it, report it):

  - ``cgroup``: a cgroup v2 of its own (Linux, a writable unified hierarchy). Every
    process the agent starts stays in it, however it detaches (double fork, ``setsid``,
    an empty environment); the kernel kills them all at once (``cgroup.kill``) and
    attribution is exact however many sessions a host runs. Ending costs in proportion
    to the session's own processes: no scan of the host's.
  - ``subreaper``: the agent is made a child subreaper (``PR_SET_CHILD_SUBREAPER``)
    before it runs, so the orphans of its tools are re-parented to the agent, not to
    init, and stay in its process tree (:func:`snapshot_tree`) while the agent lives.
  - ``tree-snapshot``: the agent's tree recorded while it runs, and the processes
    carrying the session's marker (:func:`marked_processes`); a tool that detaches
    between two records and clears its environment escapes this one.

  ``RAWP_CONTAINMENT`` (``cgroup``, ``subreaper`` or ``tree-snapshot``) caps the
  mechanism, e.g. where another manager owns the cgroups.
- :func:`snapshot_tree`: a process and its descendants, taken while it is alive
  (the children of a dead process are re-parented and cannot be found any more).
- :func:`running`: alive and not a zombie.
- :func:`kill_and_wait`: SIGKILL a snapshot and wait, bounded, until it is gone.
- :func:`marked_processes`: the processes whose environment carries a marker such
  as ``RAWP_SESSION_ID=<id>``; this finds tool processes an agent started in
  sessions of their own that were re-parented to init when their parent exited.
- :class:`ParentDeathGuard`: kills a process's cgroup, or its tree and every process
  carrying the marker, if the host dies without closing the session (SIGKILL, crash).
  Every guard of a host process is a registration with one shared supervisor, a small
  Python process started with the first guard and let go with the last: it blocks
  reading a pipe only the host holds, and end-of-file with registrations left means
  the host is gone. A session adds one line to that pipe when it starts and one when
  it closes, no process or thread of its own. ``prctl(PR_SET_PDEATHSIG)`` would be
  lighter but fires when the spawning *thread* exits, and trio spawns from worker
  threads that exit when idle; SDKs that spawn the agent themselves also have no
  pre-exec hook to set it.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import itertools
import json
import os
import re
import select
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.to_thread
import psutil
from anyio.abc import Process
from structlog.stdlib import BoundLogger

from rawp_adapters._errors import GuardError, InvalidSettingsError
from rawp_adapters._frames import Containment

__all__ = [
    "ARM_TIMEOUT_S",
    "CONTAINMENTS",
    "CONTAINMENT_VAR",
    "CREATED_SLACK_S",
    "KILL_WAIT_S",
    "Confinement",
    "Containment",
    "GuardError",
    "Marker",
    "ParentDeathGuard",
    "SessionCgroup",
    "host_supervisor",
    "kill_and_wait",
    "marked_processes",
    "open_confined_process",
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

"""How an agent's processes are kept within reach (see the module's documentation)."""
CONTAINMENTS: tuple[Containment, ...] = ("cgroup", "subreaper", "tree-snapshot")
"""Every mechanism, strongest first."""
CONTAINMENT_VAR = "RAWP_CONTAINMENT"
"""Environment variable naming the strongest mechanism a host may use."""


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


# ---------------------------------------------------------------- confinement


class SessionCgroup:
    """A cgroup v2 of one agent's own. Every process the agent starts stays in it,
    however it detaches; :meth:`kill_and_wait` ends them all (``cgroup.kill``)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def create(cls, name: str) -> SessionCgroup:
        """Make the cgroup ``name`` inside this process's own one.

        Raises ``OSError`` where cgroup v2 is missing or not writable, and where it
        lacks ``cgroup.kill`` (Linux before 5.14).
        """
        path = _own_cgroup_dir() / name
        path.mkdir()
        cgroup = cls(path)
        if not (path / "cgroup.kill").exists():
            cgroup.remove()
            raise OSError(errno.ENOTSUP, "cgroup.kill needs Linux 5.14 or later", str(path))
        return cgroup

    def admit(self, pid: int) -> None:
        """Move ``pid`` (and later everything it starts) into this cgroup."""
        (self.path / "cgroup.procs").write_text(f"{pid}\n")

    def pids(self) -> list[int]:
        """The processes in it now (none once it is removed)."""
        try:
            return [int(line) for line in (self.path / "cgroup.procs").read_text().split()]
        except FileNotFoundError:
            return []

    def populated(self) -> bool:
        """Some process in it still runs (zombies do not count)."""
        try:
            return "populated 1" in (self.path / "cgroup.events").read_text()
        except FileNotFoundError:
            return False

    async def kill_and_wait(self, timeout: float = KILL_WAIT_S) -> list[int]:
        """SIGKILL every process in it, atomically with respect to forks, and wait until
        none runs (at most ``timeout`` seconds); the pids that survived."""
        with suppress(FileNotFoundError):
            (self.path / "cgroup.kill").write_text("1")
        deadline = time.monotonic() + timeout
        # The kernel reports emptiness in cgroup.events; polling it reads one small file.
        while self.populated():
            if time.monotonic() >= deadline:
                return self.pids()
            await anyio.sleep(_KILL_POLL_S)
        return []

    def remove(self) -> None:
        """Delete the (empty) cgroup; ``OSError`` (EBUSY) while a process runs in it."""
        with suppress(FileNotFoundError):
            self.path.rmdir()


def _own_cgroup_dir() -> Path:
    """This process's cgroup v2 directory (``FileNotFoundError`` where there is none)."""
    own = None
    with open("/proc/self/cgroup") as lines:
        for line in lines:
            if line.startswith("0::"):
                own = line[3:].rstrip("\n")
    if own is None:
        raise FileNotFoundError(errno.ENOENT, "this process is in no cgroup v2 hierarchy")
    with open("/proc/self/mountinfo") as lines:
        for line in lines:
            fields, _, fs = line.partition(" - ")
            if fs.split(" ", 1)[0] != "cgroup2":
                continue
            root, mount = (_unescape_mountinfo(f) for f in fields.split(" ")[3:5])
            if own == root or own.startswith(root.rstrip("/") + "/"):
                return Path(mount, own[len(root) :].lstrip("/"))
    raise FileNotFoundError(errno.ENOENT, "no cgroup v2 file system shows this process's cgroup")


def _unescape_mountinfo(field: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


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


async def _open(argv: Sequence[str], cwd: Path, env: Mapping[str, str]) -> Process:
    return await anyio.open_process(
        list(argv),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=dict(env),
        start_new_session=True,
    )


async def _open_in_cgroup(
    argv: Sequence[str], program: str, cwd: Path, env: Mapping[str, str], cgroup: SessionCgroup
) -> Process:
    process = await _open(["/bin/sh", "-c", _GATE, "rawp-gate", program, *argv[1:]], cwd, env)
    assert process.stdin is not None
    with anyio.CancelScope(shield=True):
        try:
            cgroup.admit(process.pid)
            await process.stdin.send(b"\n")
        except BaseException:
            process.kill()
            await process.wait()
            await process.aclose()
            raise
    return process


async def open_confined_process(
    argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], name: str
) -> tuple[Process, Confinement]:
    """Start ``argv`` (pipes on stdin, stdout and stderr, in a new session) confined by
    the strongest mechanism available: its own cgroup v2 (called ``rawp-<name>-<n>``),
    else as a child subreaper, else nothing more than the tree snapshots.

    Raises ``OSError`` when ``argv`` cannot be started, ``ValueError`` when
    ``RAWP_CONTAINMENT`` names no mechanism. Remove the cgroup when the agent is gone.
    """
    allowed = _allowed_containments()
    if allowed[0] == "tree-snapshot":
        return await _open(argv, cwd, env), Confinement("tree-snapshot")
    program = _program(argv[0], cwd=cwd, env=env)
    refused: list[str] = []
    if "cgroup" in allowed:
        try:
            cgroup = SessionCgroup.create(f"rawp-{name}-{uuid.uuid4().hex[:8]}")
        except OSError as exc:
            refused.append(f"no cgroup: {exc}")
        else:
            try:
                process = await _open_in_cgroup(argv, program, cwd, env, cgroup)
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
            process = await _open(wrapper, cwd, env)
        except OSError as exc:
            refused.append(f"cannot start as a child subreaper: {exc}")
        else:
            return process, Confinement("subreaper", None, "; ".join(refused) or None)
    return await _open(argv, cwd, env), Confinement("tree-snapshot", None, "; ".join(refused))


# ---------------------------------------------------------------- the host's supervisor

# Runs with ``python -I -c``: only the standard library and psutil (installed beside the
# interpreter with this package). One per host process, whatever its number of sessions.
# It reads JSON lines on stdin, a pipe only the host holds: ["watch", key, pid, started,
# since, cgroup, marker] and ["release", key]. End of file means the host is gone (or,
# with nothing watched, that it needs no supervisor any more): it kills whatever is
# still watched. psutil is imported after "armed" (a session's start need not wait for
# it), and only once a process without a cgroup is watched (the kernel does the rest for
# cgroups); such a pid is looked up as it is registered, so that the kill follows the
# host's death at once. Every cgroup is killed first (the
# kernel does it at once); the processes of the others are stopped (an agent that exits
# when its stdin closes would hand the orphans it adopted as a subreaper on to init),
# killed with their trees, then the marked processes are searched a few times, all
# markers in one pass over /proc (one may start another while they die). Last, the
# cgroups are waited for and removed.
_SUPERVISOR_PROGRAM = r"""
import importlib.util, json, os, signal, sys, time
if importlib.util.find_spec("psutil") is None:
    sys.exit("psutil cannot be imported by " + sys.executable + " -I")
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGHUP, signal.SIG_IGN)
sys.stdout.write("armed\n")
sys.stdout.close()
os.dup2(os.open(os.devnull, os.O_WRONLY), 2)  # the host stops reading stderr now
psutil = None
watched = {}

def watch(key, pid, started, since, cgroup, marker):
    global psutil
    root = None
    if not cgroup:
        if psutil is None:
            import psutil
        try:
            root = psutil.Process(pid)
            if abs(root.create_time() - started) >= 0.01:
                root = None
        except psutil.Error:
            root = None
    watched[key] = (root, since, cgroup, tuple(marker) if marker else None)

pending = b""
while True:
    chunk = os.read(0, 1 << 16)
    if not chunk:
        break
    *lines, pending = (pending + chunk).split(b"\n")
    for line in lines:
        try:
            message = json.loads(line)
            if message[0] == "watch":
                watch(*message[1:])
            elif message[0] == "release":
                watched.pop(message[1], None)
        except Exception:
            continue
if not watched:
    sys.exit(0)

entries = list(watched.values())
cgroups = [cgroup for _, _, cgroup, _ in entries if cgroup]
for cgroup in cgroups:
    try:
        with open(os.path.join(cgroup, "cgroup.kill"), "w") as f:
            f.write("1")
    except OSError:
        pass

def kill(procs):
    for proc in procs:
        try:
            proc.kill()
        except psutil.Error:
            pass

roots = [root for root, _, cgroup, _ in entries if root is not None and not cgroup]
for root in roots:
    try:
        root.suspend()
    except psutil.Error:
        pass
for root in roots:
    try:
        kill([root, *root.children(recursive=True)])
    except psutil.Error:
        pass
markers = {marker for _, _, cgroup, marker in entries if marker and not cgroup}
if markers:
    since = min(since for _, since, cgroup, marker in entries if marker and not cgroup)
    keys = {key for key, _ in markers}
    for _ in range(3):
        found = []
        for proc in psutil.process_iter(["create_time"]):
            if proc.pid == os.getpid() or (proc.info["create_time"] or 0) < since:
                continue
            try:
                environ = proc.environ()
                if any((key, environ.get(key)) in markers for key in keys):
                    if proc.status() != psutil.STATUS_ZOMBIE:
                        found.append(proc)
            except psutil.Error:
                pass
        if not found:
            break
        kill(found)

deadline = time.monotonic() + 5
for cgroup in cgroups:
    try:
        while time.monotonic() < deadline:
            with open(os.path.join(cgroup, "cgroup.events")) as f:
                if "populated 0" in f.read():
                    break
            time.sleep(0.01)
        os.rmdir(cgroup)
    except OSError:
        pass
"""


class _Supervisor:
    """The running supervisor process and the write end of its pipe (non-blocking)."""

    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        assert popen.stdin is not None
        self.popen = popen
        self.pipe = popen.stdin
        self.fd = popen.stdin.fileno()
        os.set_blocking(self.fd, False)

    def try_send(self, line: bytes) -> bool:
        """Write ``line`` (shorter than ``PIPE_BUF``: all of it or nothing) without
        blocking; False when the pipe is full. ``OSError`` when the supervisor is gone."""
        try:
            os.write(self.fd, line)
        except BlockingIOError:
            return False
        return True

    def send(self, line: bytes) -> None:
        """Write ``line``, waiting (bounded) while the pipe is full; in a worker thread."""
        deadline = time.monotonic() + ARM_TIMEOUT_S
        while not self.try_send(line):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise GuardError("the host's process supervisor does not read its pipe")
            poll = select.poll()  # select() takes no descriptor above 1023
            poll.register(self.fd, select.POLLOUT)
            poll.poll(remaining * 1000)

    def close(self) -> None:
        with suppress(OSError):
            self.pipe.close()


class _HostSupervisor:
    """The one supervisor of this host process and what it watches (see
    :class:`ParentDeathGuard`). Thread-safe and independent of any event loop, so that
    every session of the process shares it whatever loop (or thread) runs it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._owner = os.getpid()
        self._process: _Supervisor | None = None
        self._watched: dict[str, bytes] = {}
        """The watch line of every registration, by key: replayed to a new supervisor
        should the old one have gone."""
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

    async def watch(self, entry: list[object]) -> tuple[str, int]:
        """Register ``entry`` (pid, started, since, cgroup, marker); its key and the
        supervisor's pid. Starts the supervisor when none runs."""
        key = f"{os.getpid()}-{next(self._keys)}"
        line = json.dumps(["watch", key, *entry]).encode() + b"\n"
        if self._lock.acquire(blocking=False):
            try:
                self._adopt_fork()
                process = self._process
                if process is not None and process.try_send(line):
                    self._watched[key] = line
                    return key, process.popen.pid
            except OSError:
                pass  # the supervisor is gone: start another one in a worker thread
            finally:
                self._lock.release()
        pid = await anyio.to_thread.run_sync(self._watch_blocking, key, line)
        return key, pid

    def _watch_blocking(self, key: str, line: bytes) -> int:
        with self._lock:
            self._adopt_fork()
            self._watched[key] = line
            try:
                return self._ensure_running_locked(line)
            except BaseException:
                self._watched.pop(key, None)
                raise

    def _ensure_running_locked(self, line: bytes) -> int:
        process = self._process
        if process is not None:
            try:
                process.send(line)
            except OSError:
                self._process = None  # gone (killed by someone): replaced below
                process.close()
                with suppress(subprocess.TimeoutExpired):
                    process.popen.wait(0)
            else:
                return process.popen.pid
        process = self._start_locked()
        try:
            for watched in self._watched.values():
                process.send(watched)
        except OSError as exc:
            process.popen.kill()
            process.close()
            process.popen.wait()
            raise GuardError(f"the host's process supervisor went away: {exc}") from exc
        self._process = process
        return process.popen.pid

    def _start_locked(self) -> _Supervisor:
        argv = [sys.executable, "-I", "-c", _SUPERVISOR_PROGRAM]
        popen = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        self.starts += 1
        assert popen.stdout is not None
        assert popen.stderr is not None
        with popen.stdout, popen.stderr:
            poll = select.poll()  # select() takes no descriptor above 1023
            poll.register(popen.stdout, select.POLLIN)
            armed = popen.stdout.readline() if poll.poll(ARM_TIMEOUT_S * 1000) else b""
            if armed != b"armed\n":
                if popen.poll() is None:
                    popen.kill()
                with suppress(subprocess.TimeoutExpired):
                    popen.wait(1)
                stderr = popen.stderr.read(4096) if popen.returncode is not None else b""
                detail = stderr.decode(errors="replace").strip() or "no answer"
                raise GuardError(
                    f"the parent-death guard ({sys.executable} -I) did not start: {detail}"
                )
        return _Supervisor(popen)

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
    reading a pipe only the host holds, and end-of-file means the host is gone. A
    session costs one line written to that pipe when it starts and one when it closes:
    no process, thread or /proc scan of its own.
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
        cls, pid: int, *, marker: Marker | None = None, cgroup: SessionCgroup | None = None
    ) -> ParentDeathGuard:
        """Register ``pid`` with the host's supervisor (started when none runs, and
        waited for until it watches). With ``cgroup`` (which holds ``pid``) the cgroup is
        killed and removed; otherwise ``pid``'s tree and the processes carrying ``marker``.

        Raises ``GuardError`` (or ``OSError``) if the supervisor cannot start, and
        ``psutil.NoSuchProcess`` if ``pid`` is already gone.
        """
        started = psutil.Process(pid).create_time()
        entry: list[object] = [pid, started, started - CREATED_SLACK_S]
        entry.append(str(cgroup.path) if cgroup is not None else "")
        entry.append(list(marker) if marker is not None else None)
        key, supervisor = await _host_supervisor.watch(entry)
        return cls(key, supervisor)

    async def release(self, log: BoundLogger) -> None:
        """Stand down (the session closed normally)."""
        if self._released:
            return
        self._released = True
        with anyio.CancelScope(shield=True):
            if not await _host_supervisor.release(self._key):
                log.warning("the host's process supervisor was already gone", pid=self._pid)
