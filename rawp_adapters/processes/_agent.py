"""One agent run as a child process: spawned confined, its pipes, a bounded stderr tail,
and its end as a whole tree.

Termination: close stdin, grace, SIGTERM to its process group, grace, SIGKILL, then kill
the cgroup (or every recorded or marked process) and confirm that nothing is left. The
host's :class:`~rawp_adapters.processes.ParentDeathGuard` does the same killing should
the host die without closing the session.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import anyio.abc
import anyio.lowlevel
import anyio.to_thread
import psutil

from rawp_adapters._errors import GuardError, RawpError
from rawp_adapters._frames import Containment
from rawp_adapters.processes._confine import Confinement, open_confined_process
from rawp_adapters.processes._exit import ExitStatus, exit_status
from rawp_adapters.processes._pipes import AgentPipes
from rawp_adapters.processes._supervisor import ParentDeathGuard
from rawp_adapters.processes._tree import (
    CREATED_SLACK_S,
    Marker,
    kill_and_wait,
    marked_processes,
    running,
)

if TYPE_CHECKING:
    from structlog.stdlib import BoundLogger

_KILL_WAIT = 2.0
"""Seconds for SIGKILLed processes to disappear before they are reported as left over."""


class AgentWriteError(RawpError, ConnectionError):
    """The agent's stdin is closed: it exited or is being stopped."""


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
        pipes: AgentPipes,
        confinement: Confinement,
        marker: Marker,
        stderr_tail_bytes: int,
        log: BoundLogger,
    ) -> None:
        self._process = process
        self._pipes = pipes
        self._confinement = confinement
        self._marker = marker
        self._log = log
        self._tail = _Tail(stderr_tail_bytes)
        self._stderr_ended = anyio.Event()
        self._write_lock = anyio.Lock()
        self._guard_lock = anyio.Lock()
        """Held while the guard starts: the stdin it was handed is not closed meanwhile."""
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
        pipes = AgentPipes()
        stdin, stdout, stderr = pipes.agent_ends
        try:
            process, confinement = await open_confined_process(
                argv,
                cwd=cwd,
                env=env,
                name=marker[1],
                stdin=(stdin, pipes.host_ends[0]),
                stdout=stdout,
                stderr=stderr,
            )
        except BaseException:
            pipes.close()
            raise
        pipes.spawned()
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
            pipes=pipes,
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
        """Start the watchdog that kills the agent's processes if this host dies first
        (holding its pipes open until then: see :class:`ParentDeathGuard`); raises
        ``GuardError`` when it cannot start."""
        try:
            async with self._guard_lock:
                self._guard = await ParentDeathGuard.start(
                    self.pid,
                    marker=self._marker,
                    cgroup=self._confinement.cgroup,
                    pipes=() if self._stdin_closed else self._pipes.host_ends,
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
        return self._pipes.stdout

    def stderr_tail(self) -> str | None:
        return self._tail.text()

    async def write(self, data: bytes) -> None:
        """Write to the agent's stdin; raises :class:`AgentWriteError` once it is closed."""
        async with self._write_lock:
            if self._stdin_closed:
                raise AgentWriteError("the agent's stdin is closed")
            try:
                await self._pipes.stdin.send(data)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
                raise AgentWriteError(f"cannot write to the agent: {exc!r}") from exc

    async def close_stdin(self) -> None:
        """Close the agent's stdin, the guard's copy first, so that the agent sees its end."""
        async with self._guard_lock, self._write_lock:
            if self._stdin_closed:
                return
            self._stdin_closed = True
            if self._guard is not None:
                await self._guard.let_go_of_pipes()
            await self._pipes.stdin.aclose()

    async def drain_stderr(self) -> None:
        """Read stderr to its end, keeping a bounded tail (never leave a pipe full)."""
        try:
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                async for chunk in self._pipes.stderr:
                    self._tail.add(chunk)
        finally:
            self._stderr_ended.set()

    async def stderr_ended(self, within: float = 1.0) -> bool:
        """Wait up to ``within`` seconds for :meth:`drain_stderr` to reach the end of
        stderr, so that the tail holds the agent's last words; an exited agent's pipe can
        still hold them (or a leftover child can hold it open). True if the end came."""
        with anyio.move_on_after(within):
            await self._stderr_ended.wait()
        return self._stderr_ended.is_set()

    async def wait(self) -> int:
        return await self._process.wait()

    async def watch_tree(self, interval: float, busy: Callable[[], bool]) -> None:
        """Record the agent's process tree every ``interval`` seconds while ``busy()``
        (tools run during turns), and once more when it stops being busy, until the
        agent exits. An idle or cgroup-confined agent costs no scans."""
        was_busy = False
        while self._process.returncode is None and self._confinement.cgroup is None:
            now_busy = busy()
            if now_busy or was_busy:
                await self.record_tree()
            was_busy = now_busy
            await anyio.sleep(interval)

    async def record_tree(self) -> None:
        """Remember the agent's descendants now (the children of a dead process cannot
        be found any more), in a worker thread: the scan reads all of /proc."""
        if self._confinement.cgroup is not None:
            return
        known = list(self._recorded.values())
        children, gone = await anyio.to_thread.run_sync(self._scan_tree, known)
        for pid in gone:
            self._recorded.pop(pid, None)
        for child in children:
            self._recorded.setdefault(child.pid, child)

    def _scan_tree(self, known: list[psutil.Process]) -> tuple[list[psutil.Process], list[int]]:
        """The agent's descendants now, and which known ones are gone."""
        gone = [proc.pid for proc in known if not running(proc)]
        if self._root is None:
            return [], gone
        try:
            return self._root.children(recursive=True), gone
        except psutil.Error:
            return [], gone

    async def terminate(self, *, stdin_grace: float, sigterm_grace: float) -> ExitStatus | None:
        """Stop the agent and everything it started (rule 6); ``None`` if it never died."""
        await self.record_tree()
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
        every marked process, then confirm they are gone."""
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
        if leftovers:
            self._log.info("killing processes the agent left behind", pids=sorted(leftovers))
            if survivors := await kill_and_wait(list(leftovers.values()), timeout=_KILL_WAIT):
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
        self._pipes.close()
        await anyio.lowlevel.checkpoint()

    def _signal_group(self, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)

    async def _exited_within(self, seconds: float) -> bool:
        with anyio.move_on_after(seconds):
            await self._process.wait()
        return self._process.returncode is not None
