"""Which version of the agent runs: ``<command> --version``, asked once per command line.

The xcsh ``ready`` frame names the version; omp's and pi's do not (pi has none), and
neither does their ``get_state``. So the agent's command line is run once more with
``--version`` (omp 18.2.3 prints ``18.2.3`` or ``omp/18.2.3``, pi ``0.73.1`` on
stderr), bounded in time, alongside the agent's start. A failure is no version, never a
failed session.

That runs the command a second time with an argument it was not given, so by default
only for the agents known to answer it at once (:func:`known_agent`): a wrapper such as
``npx`` would start all it starts once more. The run is confined and ended as the agent
is (:class:`~rawp_adapters.processes.AgentProcess`): nothing it starts outlives it.
"""

from __future__ import annotations

import contextlib
import os
import re
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from rawp_adapter_process._settings import ProcessSettings
from rawp_adapters.processes import AgentProcess, GuardError

if TYPE_CHECKING:
    from structlog.stdlib import BoundLogger

_VERSION = re.compile(rb"\b\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]+)?")
_MAX_OUTPUT = 4096
"""Bytes of each stream of the answer that are read; the rest is left unread."""
_DRAIN = 1.0
"""Seconds the answer may still take to be read once the command and all it started are
gone (the pipes then hold all of it)."""
PROBE_VAR = "RAWP_VERSION_PROBE"
"""Marks the processes of one ``--version`` run (the session's own marker would also
match the agent's processes, which must not be killed with the run's)."""

KNOWN_PROGRAMS = frozenset({"omp", "pi", "xcsh"})
"""Executables of the agents known to answer ``--version`` at once."""
KNOWN_PACKAGES = (
    "@oh-my-pi/pi-coding-agent",
    "@mariozechner/pi-coding-agent",
    "@f5-sales-demo/xcsh",
)
"""Their npm packages, for a script of theirs run by a JavaScript runtime."""
_RUNTIMES = frozenset({"node", "nodejs", "bun", "deno"})

_known: dict[tuple[str, ...], str | None] = {}
"""Versions by command line, for the lifetime of the host (what a command runs does not
change under a host's feet often enough to ask again)."""
_asking: dict[tuple[str, ...], anyio.Event] = {}
"""The command lines being asked now: a session that starts meanwhile waits for that
answer instead of starting ``--version`` once more (a host opening many sessions at once
runs one)."""


def known_agent(command: Sequence[str]) -> bool:
    """``command`` runs omp, pi or xcsh: its program is named so, or is a script of
    their npm package that ``node``, ``bun`` or ``deno`` runs (symbolic links followed)."""
    program = command[0]
    if Path(program).name in _RUNTIMES:
        program = next((arg for arg in command[1:] if not arg.startswith("-")), "")
    if Path(program).name in KNOWN_PROGRAMS:
        return True
    if os.sep not in program:
        return False
    parts = Path(os.path.realpath(program)).parts
    return any(
        parts[i] == "node_modules" and "/".join(parts[i + 1 : i + 3]) in KNOWN_PACKAGES
        for i in range(len(parts))
    )


def probes_version(settings: ProcessSettings) -> bool:
    """Whether ``settings.command`` is run once more with ``--version`` (``version_probe``)."""
    if settings.version_probe == "known":
        return known_agent(settings.command)
    return settings.version_probe == "always"


def remember_version(argv: Sequence[str], version: str) -> None:
    """Note the version the agent's ``ready`` frame named, so that later sessions of the
    same command line need not ask (nor start a process to)."""
    _known[tuple(argv)] = version


async def agent_version(
    argv: Sequence[str], *, env: Mapping[str, str], cwd: Path, log: BoundLogger
) -> str | None:
    """The version ``argv + ["--version"]`` prints on stdout or stderr (``None`` if it
    prints none or fails). Cached per ``argv`` once it answered. The caller bounds the
    wait: cancelled, the command and all it started are killed (and asked again next
    time). Either way nothing the command started runs any more when this returns."""
    key = tuple(argv)
    while key not in _known:
        asking = _asking.get(key)
        if asking is None:
            break
        await asking.wait()  # another session asks; if it is cancelled, ask in its stead
    if key in _known:
        return _known[key]
    _asking[key] = asking = anyio.Event()
    try:
        return await _ask(key, argv, env=env, cwd=cwd, log=log)
    finally:
        del _asking[key]
        asking.set()


async def _ask(
    key: tuple[str, ...],
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path,
    log: BoundLogger,
) -> str | None:
    marker = (PROBE_VAR, uuid.uuid4().hex)
    try:
        probe = await AgentProcess.spawn(
            [*argv, "--version"],
            cwd=cwd,
            env={**env, PROBE_VAR: marker[1]},
            marker=marker,
            stderr_tail_bytes=_MAX_OUTPUT,
            log=log.bind(version_probe=True),
        )
    except OSError:
        _known[key] = None
        return None
    try:
        await probe.start_guard()
        returncode, output = await _answer(probe)
    except GuardError as exc:
        log.warning("the version of the agent is not asked", reason=str(exc))
        return None
    finally:
        with anyio.CancelScope(shield=True):
            await probe.terminate(stdin_grace=0, sigterm_grace=0)
            await probe.release()
    match = _VERSION.search(output) if returncode == 0 else None
    version = match.group().decode() if match is not None else None
    _known[key] = version
    return version


async def _answer(probe: AgentProcess) -> tuple[int, bytes]:
    """The command's exit status and what it printed, stdout then stderr's tail; all it
    started is killed once it exited (they may hold its pipes open)."""
    await probe.close_stdin()
    stdout = bytearray()
    stdout_ended = anyio.Event()

    async def read_stdout() -> None:
        try:
            with contextlib.suppress(anyio.BrokenResourceError):
                async for chunk in probe.stdout:
                    stdout.extend(chunk)
                    if len(stdout) >= _MAX_OUTPUT:
                        break
        finally:
            stdout_ended.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(read_stdout)
        tg.start_soon(probe.drain_stderr)
        returncode = await probe.wait()
        await probe.kill_leftovers()
        with anyio.move_on_after(_DRAIN):
            await stdout_ended.wait()
        await probe.stderr_ended(_DRAIN)
        tg.cancel_scope.cancel()
    stderr = probe.stderr_tail() or ""
    return returncode, bytes(stdout[:_MAX_OUTPUT]) + b"\n" + stderr.encode()
