"""The agent's OS process, by the same rules as the process adapter: spawned confined
(:func:`~rawp_adapters.processes.open_confined_process`: its own cgroup, else a child
subreaper, else tree snapshots and the ``RAWP_SESSION_ID`` marker), watched by the
host's :class:`~rawp_adapters.processes.ParentDeathGuard`, its exit mapped to DPS terms
(0, 1-127, 128+N, -N), and stopped as a whole tree: stdin closed, grace, SIGTERM to its
process group, grace, SIGKILL, then every process it left behind killed (claude-agent-acp
and codex-acp ignore end of stdin; claude can leave its CLI child running).
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.abc
import anyio.to_thread
import psutil
from structlog.stdlib import BoundLogger

from rawp_adapters.frames import AgentError, Containment
from rawp_adapters.processes import (
    CREATED_SLACK_S,
    Confinement,
    GuardError,
    Marker,
    ParentDeathGuard,
    kill_and_wait,
    marked_processes,
    open_confined_process,
    running,
    snapshot_tree,
)

_KILL_WAIT = 2.0


@dataclass(frozen=True, slots=True)
class ExitStatus:
    """How the agent process ended, in DPS terms."""

    returncode: int
    exit_code: int | None
    signal: str | None

    def describe(self) -> str:
        if self.returncode < 0:
            return f"was killed by {self.signal}"
        if self.signal is not None:
            return f"exited with code {self.returncode} ({self.signal})"
        return f"exited with code {self.returncode}"

    def error(self, stderr_tail: str | None) -> AgentError | None:
        if self.returncode == 0:
            return None
        return AgentError(
            severity="fatal",
            error_code="SIGNAL_EXIT" if self.signal is not None else "PROCESS_EXIT",
            message=f"the agent {self.describe()}",
            exit_code=self.exit_code,
            signal=self.signal,
            stderr_tail=stderr_tail,
        )


def exit_status(returncode: int) -> ExitStatus:
    """0, 1-127, 128+N (a shell's signal exit) or -N (killed by signal N)."""
    if returncode < 0:
        return ExitStatus(returncode, None, _signal_name(-returncode))
    if returncode > 128 and (name := _signal_name(returncode - 128)) is not None:
        return ExitStatus(returncode, returncode, name)
    return ExitStatus(returncode, returncode, None)


def _signal_name(number: int) -> str | None:
    try:
        return signal.Signals(number).name
    except ValueError:
        return None


class _Tail:
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
    """One running ACP agent. Use :meth:`spawn`."""

    def __init__(
        self,
        process: anyio.abc.Process,
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
        self._guard: ParentDeathGuard | None = None
        self._recorded: dict[int, psutil.Process] = {}
        try:
            self._started_at = psutil.Process(process.pid).create_time()
        except psutil.Error:
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
        process, confinement = await open_confined_process(argv, cwd=cwd, env=env, name=marker[1])
        log.info(
            "agent confined",
            pid=process.pid,
            containment=confinement.mechanism,
            fallback_reason=confinement.fallback_reason,
        )
        return cls(process, confinement, marker, stderr_tail_bytes, log)

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def containment(self) -> Containment:
        return self._confinement.mechanism

    @property
    def returncode(self) -> int | None:
        return self._process.returncode

    @property
    def stdout(self) -> anyio.abc.ByteReceiveStream:
        assert self._process.stdout is not None
        return self._process.stdout

    def stderr_tail(self) -> str | None:
        return self._tail.text()

    async def start_guard(self) -> None:
        try:
            self._guard = await ParentDeathGuard.start(
                self.pid, marker=self._marker, cgroup=self._confinement.cgroup
            )
        except psutil.NoSuchProcess:
            self._log.info("the agent exited before it could be guarded")
        except OSError as exc:
            raise GuardError(f"cannot start the parent-death guard: {exc}") from exc

    async def write(self, data: bytes) -> None:
        """Write to the agent's stdin; ``ConnectionError`` once it is closed."""
        stdin = self._process.stdin
        assert stdin is not None
        async with self._write_lock:
            if self._stdin_closed:
                raise ConnectionError("the agent's stdin is closed")
            try:
                await stdin.send(data)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
                raise ConnectionError(f"cannot write to the agent: {exc!r}") from exc

    async def close_stdin(self) -> None:
        stdin = self._process.stdin
        assert stdin is not None
        async with self._write_lock:
            self._stdin_closed = True
            with contextlib.suppress(anyio.BrokenResourceError, OSError):
                await stdin.aclose()

    async def drain_stderr(self) -> None:
        stderr = self._process.stderr
        assert stderr is not None
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            async for chunk in stderr:
                self._tail.add(chunk)

    async def wait(self) -> int:
        return await self._process.wait()

    def record_tree(self) -> None:
        """Remember the agent's descendants now (without a cgroup, the children of a dead
        process cannot be found any more). Cheap enough at turn boundaries."""
        if self._confinement.cgroup is not None:
            return
        for proc in snapshot_tree(self.pid)[1:]:
            self._recorded.setdefault(proc.pid, proc)

    async def terminate(self, *, stdin_grace: float, sigterm_grace: float) -> ExitStatus | None:
        """Stop the agent and everything it started; ``None`` if it never died."""
        await anyio.to_thread.run_sync(self.record_tree)
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

    async def kill_leftovers(self) -> None:
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
        leftovers = {p.pid: p for p in self._recorded.values() if running(p)}
        leftovers.update((p.pid, p) for p in marked)
        self._recorded.clear()
        if leftovers:
            self._log.info("killing processes the agent left behind", pids=sorted(leftovers))
            if survivors := await kill_and_wait(list(leftovers.values()), timeout=_KILL_WAIT):
                self._log.error("processes survived SIGKILL", pids=survivors)

    async def release(self) -> None:
        """Stand the guard down, remove the cgroup, close our ends of the pipes."""
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
