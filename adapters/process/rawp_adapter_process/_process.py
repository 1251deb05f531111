"""The agent's OS process: spawn, pipes, stderr tail, exit mapping and termination.

The agent runs in its own session (process group). xcsh-family agents start tool
processes in sessions of their own, so killing the group misses them. Where the host
allows it the agent runs in a cgroup of its own, which nothing it starts can leave;
otherwise as a child subreaper (the orphans of its tools stay in its tree), its process
tree is recorded with psutil while the agent runs, and every process that carries this
session's ``RAWP_SESSION_ID`` in its environment is found again at the end (see
:func:`~rawp_adapters.processes.open_confined_process`). Termination: close stdin,
short grace, SIGTERM to the group, grace, SIGKILL, then kill the cgroup (or every
recorded or marked process) and confirm that nothing is left. A
:class:`~rawp_adapters.processes.ParentDeathGuard` does the same killing should the
host die without closing the session (pi leaves its tool processes running when its
stdin closes).
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.abc
import anyio.to_thread
import psutil
from structlog.stdlib import BoundLogger

from rawp_adapters.frames import AgentError, Severity
from rawp_adapters.processes import (
    CREATED_SLACK_S,
    Confinement,
    Containment,
    GuardError,
    Marker,
    ParentDeathGuard,
    kill_and_wait,
    marked_processes,
    open_confined_process,
    running,
)

_KILL_WAIT = 2.0
"""Seconds for SIGKILLed processes to disappear before they are reported as left over."""


class AgentWriteError(Exception):
    """The agent's stdin is closed: it exited or is being stopped."""


@dataclass(frozen=True, slots=True)
class ExitStatus:
    """How the agent process ended, in DPS terms (rule 5)."""

    returncode: int
    exit_code: int | None
    """The exit code; ``None`` for a death by signal without one."""
    signal: str | None
    """The signal's name for a raw signal death (-N) or an exit code 128+N."""

    @property
    def clean(self) -> bool:
        return self.returncode == 0

    def describe(self) -> str:
        if self.returncode < 0:
            return f"was killed by {self.signal}"
        if self.signal is not None:
            return f"exited with code {self.returncode} ({self.signal})"
        return f"exited with code {self.returncode}"

    def error(
        self, *, severity: Severity = "fatal", stderr_tail: str | None = None, prefix: str = ""
    ) -> AgentError | None:
        """The ``agent.error`` this end calls for (``None`` for exit 0)."""
        if self.clean:
            return None
        return AgentError(
            severity=severity,
            error_code="SIGNAL_EXIT" if self.signal is not None else "PROCESS_EXIT",
            message=f"{prefix}the agent {self.describe()}",
            exit_code=self.exit_code,
            signal=self.signal,
            stderr_tail=stderr_tail,
        )


def exit_status(returncode: int) -> ExitStatus:
    """Map a Python return code: 0, 1-127, 128+N (a shell's signal exit), -N (a signal)."""
    if returncode < 0:
        return ExitStatus(returncode, None, _signal_name(-returncode))
    if returncode > 128:
        name = _signal_name(returncode - 128)
        if name is not None:
            return ExitStatus(returncode, returncode, name)
    return ExitStatus(returncode, returncode, None)


def _signal_name(number: int) -> str | None:
    try:
        return signal.Signals(number).name
    except ValueError:
        return None


class _Tail:
    """The last ``limit`` bytes of a stream."""

    __slots__ = ("_data", "_limit")

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._data = bytearray()

    def add(self, chunk: bytes) -> None:
        self._data += chunk
        if len(self._data) > 2 * self._limit:
            del self._data[: len(self._data) - self._limit]

    def text(self) -> str | None:
        text = bytes(self._data[-self._limit :]).decode("utf-8", "replace").strip()
        return text or None


class AgentProcess:
    """One running agent process. Use :meth:`spawn`."""

    def __init__(
        self,
        process: anyio.abc.Process,
        *,
        confinement: Confinement,
        marker: Marker,
        stderr_tail_bytes: int,
        log: BoundLogger,
    ) -> None:
        self._process = process
        self._confinement = confinement
        self._marker = marker
        self._log = log
        self._tail = _Tail(stderr_tail_bytes)
        self._write_lock = anyio.Lock()
        self._stdin_closed = False
        self._recorded: dict[int, psutil.Process] = {}
        self._guard: ParentDeathGuard | None = None
        try:
            self._root: psutil.Process | None = psutil.Process(process.pid)
            self._started_at = self._root.create_time()
        except psutil.Error:
            self._root = None
            self._started_at = 0.0

    @classmethod
    async def spawn(
        cls,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        marker: Marker,
        stderr_tail_bytes: int,
        log: BoundLogger,
    ) -> AgentProcess:
        """Start ``argv`` in a new session, confined as tightly as the host allows
        (logged). Raises ``OSError`` when it cannot be started."""
        process, confinement = await open_confined_process(argv, cwd=cwd, env=env, name=marker[1])
        cgroup = confinement.cgroup
        log.info(
            "agent confined",
            pid=process.pid,
            containment=confinement.mechanism,
            cgroup=str(cgroup.path) if cgroup is not None else None,
            fallback_reason=confinement.fallback_reason,
        )
        return cls(
            process,
            confinement=confinement,
            marker=marker,
            stderr_tail_bytes=stderr_tail_bytes,
            log=log,
        )

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def containment(self) -> Containment:
        """How the agent's processes are kept within reach: ``cgroup``, ``subreaper`` or
        ``tree-snapshot``."""
        return self._confinement.mechanism

    async def start_guard(self) -> None:
        """Start the watchdog that kills the agent's tree and the marked processes if
        this host dies first; raises ``GuardError`` when it cannot start."""
        try:
            self._guard = await ParentDeathGuard.start(
                self.pid, marker=self._marker, cgroup=self._confinement.cgroup
            )
        except psutil.NoSuchProcess:
            self._log.info("the agent exited before it could be guarded")
        except OSError as exc:
            raise GuardError(f"cannot start the parent-death guard: {exc}") from exc

    @property
    def returncode(self) -> int | None:
        return self._process.returncode

    @property
    def stdout(self) -> anyio.abc.ByteReceiveStream:
        stream = self._process.stdout
        assert stream is not None
        return stream

    def stderr_tail(self) -> str | None:
        return self._tail.text()

    async def write(self, data: bytes) -> None:
        """Write to the agent's stdin; raises :class:`AgentWriteError` once it is closed."""
        stdin = self._process.stdin
        assert stdin is not None
        async with self._write_lock:
            if self._stdin_closed:
                raise AgentWriteError("the agent's stdin is closed")
            try:
                await stdin.send(data)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
                raise AgentWriteError(f"cannot write to the agent: {exc!r}") from exc

    async def close_stdin(self) -> None:
        stdin = self._process.stdin
        assert stdin is not None
        async with self._write_lock:
            self._stdin_closed = True
            with contextlib.suppress(anyio.BrokenResourceError, OSError):
                await stdin.aclose()

    async def drain_stderr(self) -> None:
        """Read stderr to its end, keeping a bounded tail (never leave a pipe full)."""
        stderr = self._process.stderr
        assert stderr is not None
        try:
            async for chunk in stderr:
                self._tail.add(chunk)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass

    async def wait(self) -> int:
        return await self._process.wait()

    async def watch_tree(self, interval: float, busy: Callable[[], bool]) -> None:
        """Record the agent's process tree every ``interval`` seconds while ``busy()``
        (tools run during turns), and once more when it stops being busy, until the
        agent exits. An idle session costs no scans, nor does a confined one (its cgroup
        holds every process).

        The scan reads all of /proc, so it runs in a worker thread: the event loop (and
        the other sessions' streams) never wait for it.
        """
        if self._confinement.cgroup is not None:
            return
        was_busy = False
        while self._process.returncode is None:
            now_busy = busy()
            if now_busy or was_busy:
                known = list(self._recorded.values())
                children, gone = await anyio.to_thread.run_sync(self._scan_tree, known)
                self._remember(children, gone)
            was_busy = now_busy
            await anyio.sleep(interval)

    def record_descendants(self) -> None:
        if self._confinement.cgroup is not None:
            return
        self._remember(*self._scan_tree(list(self._recorded.values())))

    def _scan_tree(self, known: list[psutil.Process]) -> tuple[list[psutil.Process], list[int]]:
        """The agent's descendants now, and which known ones are gone."""
        gone = [proc.pid for proc in known if not running(proc)]
        if self._root is None:
            return [], gone
        try:
            return self._root.children(recursive=True), gone
        except psutil.Error:
            return [], gone

    def _remember(self, children: list[psutil.Process], gone: list[int]) -> None:
        for pid in gone:
            self._recorded.pop(pid, None)
        for child in children:
            self._recorded.setdefault(child.pid, child)

    async def terminate(self, *, stdin_grace: float, sigterm_grace: float) -> ExitStatus | None:
        """Stop the agent and everything it started (rule 6); ``None`` if it never died."""
        self.record_descendants()
        await self.close_stdin()
        if not await self._exited_within(stdin_grace):
            self._log.info("agent still running after stdin was closed; SIGTERM", pid=self.pid)
            self._signal_group(signal.SIGTERM)
            if not await self._exited_within(sigterm_grace):
                self._log.warning("agent ignored SIGTERM; SIGKILL", pid=self.pid)
                self._signal_group(signal.SIGKILL)
                await self._exited_within(_KILL_WAIT)
        await self.kill_leftovers()
        code = self._process.returncode
        return exit_status(code) if code is not None else None

    def interrupt(self) -> None:
        """SIGTERM to the agent's process group."""
        self._signal_group(signal.SIGTERM)

    async def kill_leftovers(self) -> None:
        """Kill every process of the agent's cgroup, or every recorded descendant and
        every process marked with this session, then confirm they are gone."""
        cgroup = self._confinement.cgroup
        if cgroup is not None:
            if pids := cgroup.pids():
                self._log.info("killing processes the agent left behind", pids=pids)
                if survivors := await cgroup.kill_and_wait(_KILL_WAIT):
                    self._log.error("processes survived SIGKILL", pids=survivors)
            return
        since = self._started_at - CREATED_SLACK_S
        marked = await anyio.to_thread.run_sync(
            lambda: marked_processes(self._marker, created_after=since)
        )
        leftovers = {proc.pid: proc for proc in self._recorded.values() if running(proc)}
        leftovers.update((proc.pid, proc) for proc in marked)
        self._recorded.clear()
        if not leftovers:
            return
        self._log.info("killing processes the agent left behind", pids=sorted(leftovers))
        survivors = await kill_and_wait(list(leftovers.values()), timeout=_KILL_WAIT)
        if survivors:
            self._log.error("processes survived SIGKILL", pids=survivors)

    async def release(self) -> None:
        """Stand the guard down, remove the agent's cgroup and close our ends of the
        pipes (after the agent is gone)."""
        if self._guard is not None:
            guard, self._guard = self._guard, None
            await guard.release(self._log)
        cgroup = self._confinement.cgroup
        if cgroup is not None:
            try:
                cgroup.remove()
            except OSError as exc:
                self._log.error("cannot remove the agent's cgroup", error=str(exc))
        with anyio.move_on_after(_KILL_WAIT):
            await self._process.aclose()

    def _signal_group(self, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)

    async def _exited_within(self, seconds: float) -> bool:
        with anyio.move_on_after(seconds):
            await self._process.wait()
        return self._process.returncode is not None
