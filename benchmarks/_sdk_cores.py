"""What the SDK core benchmarks share: a session of the ``sdk`` adapter read to each
turn's end, its frames/s on one streamed answer, the demo core beside it, the time from a
Master's allow to the gated tool's result, and the printed comparison with the SDK
alone. Each ``bench_<core>.py`` adds how its SDK runs alone.

The core and its SDK alone are measured in turns, one after the other (a core turn, an
SDK turn, …), so that load from other work on the machine falls on both alike. The SDK
alone runs on an asyncio island of the benchmark's (the benchmark's own loop on asyncio,
a thread on trio), the session waiting meanwhile."""

from __future__ import annotations

import argparse
import contextlib
import functools
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import anyio
from rawp_adapter_sdk import SdkAdapter
from rawp_adapter_sdk.islands import AsyncioIsland

from benchmarks._common import percentile, print_machine, print_table, ratio
from rawp_adapters import Session, open_session
from rawp_adapters.frames import InteractionRequestFrame
from tests.support.llm_openai import ScriptedOpenAI


@dataclass(frozen=True, slots=True)
class Lap:
    """From one moment to a later one: wall seconds, and the CPU seconds of the whole
    process meanwhile (what load from other processes changes least)."""

    seconds: float
    cpu_seconds: float


class Stopwatch:
    """Started when made; :meth:`lap` is the time since."""

    def __init__(self) -> None:
        self._started, self._cpu = time.perf_counter(), time.process_time()

    def lap(self) -> Lap:
        return Lap(time.perf_counter() - self._started, time.process_time() - self._cpu)


class SdkAlone(Protocol):
    """The SDK alone (on asyncio), against the same scripted server and workspace."""

    async def warm(self) -> None:
        """One short turn: the SDK imported, a connection open."""
        ...

    async def stream(self, deltas: int) -> int:
        """One streamed answer of ``deltas`` deltas; its own events of it."""
        ...

    async def permission_turn(self) -> Lap:
        """One gated write, approved: from its resume to the tool's result."""
        ...


OpenSdkAlone = Callable[[ScriptedOpenAI, Path], contextlib.AbstractAsyncContextManager[SdkAlone]]
"""Opens the SDK alone on the scripted server (entered and left on asyncio)."""


async def _turn(session: Session, prompt: str) -> int:
    """Prompt once, allow every question, read to the turn's end; its frames."""
    frames = 0
    await session.send(session.control.prompt(prompt))
    async for frame in session:
        frames += 1
        if frame.type == "agent.interaction.request":
            assert isinstance(frame, InteractionRequestFrame)
            await session.send(session.control.allow(frame.payload.interaction_id))
        elif frame.type == "session.turn.end":
            return frames
    raise AssertionError("the session ended before the turn")


async def _idle(session: Session) -> None:
    async for frame in session:
        if frame.type == "agent.state.changed":
            return


@dataclass(frozen=True, slots=True)
class Rate:
    """Frames (or the SDK's own events) of one streamed answer, the wall time it took
    and the CPU time of the whole process meanwhile (every thread; the same scripted
    server's among them)."""

    frames: int
    seconds: float
    cpu_seconds: float

    @property
    def per_second(self) -> float:
        return self.frames / self.seconds

    @property
    def cpu_us(self) -> float:
        """CPU per frame, µs: what load from other processes changes least."""
        return self.cpu_seconds / self.frames * 1e6


async def _timed(frames: Callable[[], Awaitable[int]]) -> Rate:
    started, cpu = time.perf_counter(), time.process_time()
    count = await frames()
    return Rate(count, time.perf_counter() - started, time.process_time() - cpu)


async def core_frames(settings: dict[str, Any], workspace: Path, deltas: int) -> Rate:
    async with open_session(SdkAdapter.from_settings(settings), workspace=workspace) as session:
        await _idle(session)
        await _turn(session, "Say hello.")  # warm: the SDK imported, a connection open
        return await _timed(functools.partial(_turn, session, f"SLOW_STREAM {deltas} 0"))


async def demo_frames(workspace: Path, turns: int) -> float:
    adapter = SdkAdapter.from_settings({"core": "demo", "core_options": {"delay_ms": 0}})
    async with open_session(adapter, workspace=workspace) as session:
        await _idle(session)
        started = time.perf_counter()
        frames = 0
        for _ in range(turns):
            frames += await _turn(session, "write demo.txt")
        return frames / (time.perf_counter() - started)


async def _allow_to_result(session: Session, prompt: str) -> Lap:
    """One gated write: from the allow sent to its ``tool.invoke.result`` read."""
    clock = Stopwatch()
    took = Lap(0.0, 0.0)
    await session.send(session.control.prompt(prompt))
    async for frame in session:
        if frame.type == "agent.interaction.request":
            assert isinstance(frame, InteractionRequestFrame)
            clock = Stopwatch()
            await session.send(session.control.allow(frame.payload.interaction_id))
        elif frame.type == "tool.invoke.result":
            took = clock.lap()
        elif frame.type == "session.turn.end":
            return took
    raise AssertionError("the session ended before the turn")


async def _frames_rounds(
    settings: dict[str, Any],
    alone: SdkAlone,
    island: AsyncioIsland,
    workspace: Path,
    deltas: int,
    rounds: int,
) -> tuple[list[Rate], list[Rate]]:
    core: list[Rate] = []
    sdk: list[Rate] = []
    for _ in range(rounds):
        core.append(await core_frames(settings, workspace, deltas))
        await island.call(alone.warm)
        stream = functools.partial(island.call, functools.partial(alone.stream, deltas))
        sdk.append(await _timed(stream))
    return core, sdk


async def _permission_pairs(
    settings: dict[str, Any],
    alone: SdkAlone,
    island: AsyncioIsland,
    workspace: Path,
    turns: int,
    prompt: str,
) -> tuple[list[Lap], list[Lap]]:
    """``turns`` gated writes of the core and of the SDK alone, in turns (a first of each
    left out: the warm-up)."""
    core: list[Lap] = []
    sdk: list[Lap] = []
    async with open_session(SdkAdapter.from_settings(settings), workspace=workspace) as session:
        await _idle(session)
        for _ in range(turns + 1):
            core.append(await _allow_to_result(session, prompt))
            sdk.append(await island.call(alone.permission_turn))
    return core[1:], sdk[1:]


async def compare(
    name: str,
    settings: Callable[[ScriptedOpenAI], dict[str, Any]],
    open_alone: OpenSdkAlone,
    *,
    deltas: int,
    turns: int,
    write_prompt: str,
    rounds: int = 3,
) -> None:
    """Measure the core ``name`` and its SDK alone in turns; print both tables."""
    with ScriptedOpenAI() as llm, tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        island = AsyncioIsland(f"bench-{name}-alone")
        opened = open_alone(llm, workspace)
        try:
            alone = await island.call(opened.__aenter__)
            try:
                core_rates, sdk_rates = await _frames_rounds(
                    settings(llm), alone, island, workspace, deltas, rounds
                )
                core_samples, sdk_samples = await _permission_pairs(
                    settings(llm), alone, island, workspace, turns, write_prompt
                )
            finally:
                await island.call(functools.partial(opened.__aexit__, None, None, None))
        finally:
            await island.stop()
        demo_rate = await demo_frames(workspace, turns)
    core_rate = max(r.per_second for r in core_rates)
    sdk_rate = max(r.per_second for r in sdk_rates)
    core_cpu = min(r.cpu_us for r in core_rates)
    sdk_cpu = min(r.cpu_us for r in sdk_rates)
    pairs = list(zip(core_rates, sdk_rates, strict=True))
    print_table(
        f"frames/s, one streamed answer of {deltas:,} deltas (best of {rounds} rounds)",
        ["what", "frames/s", "core ÷ it", "CPU µs/frame", "it ÷ core"],
        [
            [f"{name} core, through the sdk adapter", core_rate, "1.00x", core_cpu, "1.00x"],
            [f"{name} alone, same stream (asyncio)", sdk_rate, ratio(core_rate, sdk_rate),
             sdk_cpu, ratio(sdk_cpu, core_cpu)],
            [f"  each round, core ÷ {name} alone", None,
             ", ".join(ratio(c.per_second, s.per_second) for c, s in pairs), None,
             ", ".join(ratio(s.cpu_us, c.cpu_us) for c, s in pairs)],
            ["demo core (from memory, not the same stream)", demo_rate,
             ratio(core_rate, demo_rate), None, None],
        ],
    )  # fmt: skip
    print_table(
        f"gated write: from the allow to the tool's result ({turns} turns each), ms",
        ["what", "p50", "p90", "p99", "CPU p50", "CPU p99"],
        [
            ["through the adapter", *_quantiles(core_samples, core_samples)],
            [f"{name} alone (its own resume)", *_quantiles(sdk_samples, sdk_samples)],
            ["added by the adapter (by rank)", *_quantiles(core_samples, sdk_samples, added=True)],
        ],
    )  # fmt: skip


def _quantiles(samples: list[Lap], baseline: list[Lap], *, added: bool = False) -> list[float]:
    """p50, p90, p99 of the wall times, p50 and p99 of the CPU times (ms); with
    ``added``, those of ``samples`` less those of ``baseline`` (by rank)."""

    def of(values: list[float], base: list[float]) -> list[float]:
        if added:
            values = [v - b for v, b in zip(sorted(values), sorted(base), strict=True)]
        return values

    wall = of([s.seconds for s in samples], [b.seconds for b in baseline])
    cpu = of([s.cpu_seconds for s in samples], [b.cpu_seconds for b in baseline])
    return [percentile(wall, q) * 1000 for q in (0.5, 0.9, 0.99)] + [
        percentile(cpu, q) * 1000 for q in (0.5, 0.99)
    ]


def run(doc: str, name: str, main: Callable[[bool], Awaitable[None]]) -> None:
    """The benchmark's command line: ``--backend asyncio|trio|both``, ``--quick``."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--backend", choices=["asyncio", "trio", "both"], default="both")
    parser.add_argument("--quick", action="store_true", help="smaller counts, for a smoke run")
    args = parser.parse_args()
    print_machine()
    for backend in ("asyncio", "trio") if args.backend == "both" else (args.backend,):
        print(f"\n{name} core on {backend}")
        anyio.run(main, args.quick, backend=backend)
