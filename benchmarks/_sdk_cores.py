"""What the SDK core benchmarks share: a session of the ``sdk`` adapter read to each
turn's end, its frames/s on one streamed answer, the demo core beside it, the time from a
Master's allow to the gated tool's result, and the printed comparison with the SDK
alone. Each ``bench_<core>.py`` adds how its SDK runs alone.

The core and its SDK alone are measured in turns, one after the other (a core turn, an
SDK turn, …), so that load from other work on the machine falls on both alike. The SDK
alone runs on an asyncio island of the benchmark's (the benchmark's own loop on asyncio,
a thread on trio), the session waiting meanwhile.

A question's round trip is timed between two points of the SDK's own code, the same
with the adapter and alone (:class:`Marks`, set by wrappers each ``bench_<core>.py``
puts around the SDK's methods): the SDK pausing for approval (its permission hook) and
the answer reaching it (its resume). Through the adapter the Master answers as soon as
it reads the question; alone a direct in-process callback answers, so what is left
there is the SDK's own pause and resume."""

from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import os
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import anyio
from rawp_adapter_sdk import SdkAdapter
from rawp_adapter_sdk.islands import AsyncioIsland

from benchmarks._common import percentile, print_machine, print_table, ratio
from benchmarks._model_server import ModelServer, model_server
from rawp_adapters import Session, open_session
from rawp_adapters.frames import InteractionRequestFrame


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


class Marks:
    """The rounds trips of the questions of a turn, from the SDK's pause for approval
    (:meth:`asked`) to the answer reaching it (:meth:`answered`)."""

    def __init__(self) -> None:
        self._open: Stopwatch | None = None
        self._laps: list[Lap] = []

    def asked(self) -> None:
        """The SDK paused for approval; one already open goes on (the SDK's first
        pause is the one that counts)."""
        if self._open is None:
            self._open = Stopwatch()

    def answered(self) -> None:
        """The answer reached the SDK (its resume began)."""
        if self._open is not None:
            self._laps.append(self._open.lap())
            self._open = None

    def take(self) -> list[Lap]:
        """The round trips since the last take."""
        laps, self._laps, self._open = self._laps, [], None
        return laps


def mark_calls(owner: object, name: str, mark: Callable[..., None], *, after: bool = False) -> None:
    """Have ``mark`` called (with the same arguments) before each call of the SDK's
    ``owner.name`` (with ``after``: once it has returned)."""
    original = getattr(owner, name)

    @functools.wraps(original)
    def marked(*args: Any, **kwargs: Any) -> Any:
        if not after:
            mark(*args, **kwargs)
        value = original(*args, **kwargs)
        if after:
            mark(*args, **kwargs)
        return value

    setattr(owner, name, marked)


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


OpenSdkAlone = Callable[[ModelServer, Path], contextlib.AbstractAsyncContextManager[SdkAlone]]
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
    and the CPU time of the whole process meanwhile (every thread; the scripted server
    runs in a process of its own)."""

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


@dataclass(frozen=True, slots=True)
class _Pairs:
    """Of each gated write of the core and of the SDK alone: the allow (the resume,
    alone) to the tool's result, and the question's round trip in the SDK."""

    core: list[Lap]
    sdk: list[Lap]
    core_questions: list[Lap]
    sdk_questions: list[Lap]


async def _permission_pairs(
    settings: dict[str, Any],
    alone: SdkAlone,
    island: AsyncioIsland,
    workspace: Path,
    turns: int,
    prompt: str,
    marks: Marks,
) -> _Pairs:
    """``turns`` gated writes of the core and of the SDK alone, in turns (a first of each
    left out: the warm-up)."""
    pairs = _Pairs([], [], [], [])
    async with open_session(SdkAdapter.from_settings(settings), workspace=workspace) as session:
        await _idle(session)
        for turn in range(turns + 1):
            with _collected_between():
                marks.take()
                core = await _allow_to_result(session, prompt)
                core_questions = marks.take()
                sdk = await island.call(alone.permission_turn)
                sdk_questions = marks.take()
            if turn:
                pairs.core.append(core)
                pairs.sdk.append(sdk)
                pairs.core_questions.extend(core_questions)
                pairs.sdk_questions.extend(sdk_questions)
    return pairs


@contextlib.contextmanager
def _collected_between() -> Iterator[None]:
    """The collector runs before the block, not in it: a full collection of this heap
    (the SDK and both histories: hundreds of thousands of objects, a quarter of a second)
    would otherwise land in a random turn of either side and be that side's p99."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


async def compare(
    name: str,
    settings: Callable[[ModelServer], dict[str, Any]],
    open_alone: OpenSdkAlone,
    *,
    deltas: int,
    turns: int,
    write_prompt: str,
    marks: Marks,
    rounds: int = 3,
) -> None:
    """Measure the core ``name`` and its SDK alone in turns; print the tables (``marks``:
    set by the SDK's methods, see :class:`Marks`)."""
    with model_server() as llm, tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        island = AsyncioIsland(f"bench-{name}-alone")
        opened = open_alone(llm, workspace)
        try:
            alone = await island.call(opened.__aenter__)
            try:
                core_rates, sdk_rates = await _frames_rounds(
                    settings(llm), alone, island, workspace, deltas, rounds
                )
                pairs = await _permission_pairs(
                    settings(llm), alone, island, workspace, turns, write_prompt, marks
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
    rounds_paired = list(zip(core_rates, sdk_rates, strict=True))
    print_table(
        f"frames/s, one streamed answer of {deltas:,} deltas (best of {rounds} rounds)",
        ["what", "frames/s", "core ÷ it", "CPU µs/frame", "it ÷ core"],
        [
            [f"{name} core, through the sdk adapter", core_rate, "1.00x", core_cpu, "1.00x"],
            [f"{name} alone, same stream (asyncio)", sdk_rate, ratio(core_rate, sdk_rate),
             sdk_cpu, ratio(sdk_cpu, core_cpu)],
            [f"  each round, core ÷ {name} alone", None,
             ", ".join(ratio(c.per_second, s.per_second) for c, s in rounds_paired), None,
             ", ".join(ratio(s.cpu_us, c.cpu_us) for c, s in rounds_paired)],
            ["demo core (from memory, not the same stream)", demo_rate,
             ratio(core_rate, demo_rate), None, None],
        ],
    )  # fmt: skip
    core_questions, sdk_questions = pairs.core_questions, pairs.sdk_questions
    print_table(
        f"a question: from the SDK's pause for approval to the answer reaching it "
        f"({len(core_questions)} and {len(sdk_questions)}, in turns), ms",
        ["what", "p50", "p90", "p99", "CPU p50", "CPU p99"],
        [
            ["through the adapter (the Master answers at once)", *_quantiles(core_questions)],
            [f"{name} alone (a direct callback answers)", *_quantiles(sdk_questions)],
            ["added by the adapter (by rank)", *_quantiles(core_questions, sdk_questions)],
        ],
    )  # fmt: skip
    print_table(
        f"gated write: from the allow to the tool's result ({turns} turns each), ms",
        ["what", "p50", "p90", "p99", "CPU p50", "CPU p99"],
        [
            ["through the adapter", *_quantiles(pairs.core)],
            [f"{name} alone (its own resume)", *_quantiles(pairs.sdk)],
            ["added by the adapter (by rank)", *_quantiles(pairs.core, pairs.sdk)],
        ],
    )  # fmt: skip
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    print(
        f"(load average at the end: {load}; CPU: the whole process's, every thread; "
        "the garbage collector runs between the permission turns, not in them)"
    )


def _quantiles(samples: list[Lap], baseline: list[Lap] | None = None) -> list[float]:
    """p50, p90, p99 of the wall times, p50 and p99 of the CPU times (ms); with a
    ``baseline``, each less the same quantile of the baseline's (by rank)."""

    def at(laps: list[Lap], fraction: float, cpu: bool) -> float:
        return percentile([lap.cpu_seconds if cpu else lap.seconds for lap in laps], fraction)

    figures = [(q, False) for q in (0.5, 0.9, 0.99)] + [(q, True) for q in (0.5, 0.99)]
    return [
        (at(samples, q, cpu) - (at(baseline, q, cpu) if baseline is not None else 0.0)) * 1000
        for q, cpu in figures
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
