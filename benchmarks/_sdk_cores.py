"""What the SDK core benchmarks share: a session of the ``sdk`` adapter read to each
turn's end, its frames/s on one streamed answer, the demo core beside it, the time from a
Master's allow to the gated tool's result, and the printed comparison with the SDK
alone. Each ``bench_<core>.py`` adds how its SDK runs alone."""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from rawp_adapter_sdk import SdkAdapter

from benchmarks._common import percentile, print_table, ratio
from rawp_adapters import Session, open_session
from rawp_adapters.frames import InteractionRequestFrame
from tests.support.llm_openai import ScriptedOpenAI

SdkAlone = Callable[[ScriptedOpenAI, Path, int, int], Awaitable[tuple[float, list[float]]]]
"""The SDK alone on asyncio: its frames/s on the stream of ``deltas`` deltas, and its
own resume-to-result times of ``turns`` gated writes (the first, warm-up, left out)."""


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


async def core_frames(settings: dict[str, Any], workspace: Path, deltas: int) -> float:
    async with open_session(SdkAdapter.from_settings(settings), workspace=workspace) as session:
        await _idle(session)
        await _turn(session, "Say hello.")  # warm: the SDK imported, a connection open
        started = time.perf_counter()
        frames = await _turn(session, f"SLOW_STREAM {deltas} 0")
        return frames / (time.perf_counter() - started)


async def demo_frames(workspace: Path, turns: int) -> float:
    adapter = SdkAdapter.from_settings({"core": "demo", "core_options": {"delay_ms": 0}})
    async with open_session(adapter, workspace=workspace) as session:
        await _idle(session)
        started = time.perf_counter()
        frames = 0
        for _ in range(turns):
            frames += await _turn(session, "write demo.txt")
        return frames / (time.perf_counter() - started)


async def _allow_to_result(session: Session, prompt: str) -> float:
    """One gated write: from the allow sent to its ``tool.invoke.result`` read."""
    allowed = took = 0.0
    await session.send(session.control.prompt(prompt))
    async for frame in session:
        if frame.type == "agent.interaction.request":
            assert isinstance(frame, InteractionRequestFrame)
            allowed = time.perf_counter()
            await session.send(session.control.allow(frame.payload.interaction_id))
        elif frame.type == "tool.invoke.result":
            took = time.perf_counter() - allowed
        elif frame.type == "session.turn.end":
            return took
    raise AssertionError("the session ended before the turn")


async def core_permission_turns(
    settings: dict[str, Any], workspace: Path, turns: int, prompt: str
) -> list[float]:
    async with open_session(SdkAdapter.from_settings(settings), workspace=workspace) as session:
        await _idle(session)
        return [await _allow_to_result(session, prompt) for _ in range(turns + 1)][1:]


async def compare(
    name: str,
    settings: Callable[[ScriptedOpenAI], dict[str, Any]],
    sdk_alone: SdkAlone,
    *,
    deltas: int,
    turns: int,
    write_prompt: str,
) -> None:
    """Measure the core ``name`` and its SDK alone in this run; print both tables."""
    with ScriptedOpenAI() as llm, tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        core_rate = await core_frames(settings(llm), workspace, deltas)
        demo_rate = await demo_frames(workspace, turns)
        core_samples = await core_permission_turns(settings(llm), workspace, turns, write_prompt)
    with ScriptedOpenAI() as llm, tempfile.TemporaryDirectory() as tmp:
        alone = lambda: sdk_alone(llm, Path(tmp), deltas, turns)  # noqa: E731
        sdk_rate, sdk_samples = await anyio.to_thread.run_sync(
            lambda: anyio.run(alone, backend="asyncio")  # it runs on asyncio only
        )
    print_table(
        f"frames/s, one streamed answer of {deltas:,} deltas",
        ["what", "frames/s", "core ÷ it"],
        [
            [f"{name} core, through the sdk adapter", core_rate, "1.00x"],
            [f"{name} alone, same stream (asyncio)", sdk_rate, ratio(core_rate, sdk_rate)],
            [
                "demo core (from memory, not the same stream)",
                demo_rate,
                ratio(core_rate, demo_rate),
            ],
        ],
    )
    added = [c - s for c, s in zip(sorted(core_samples), sorted(sdk_samples), strict=True)]
    ms = 1000.0
    print_table(
        f"gated write: from the allow to the tool's result ({turns} turns), ms",
        ["what", "p50", "p99"],
        [
            ["through the adapter", percentile(core_samples, 0.5) * ms,
             percentile(core_samples, 0.99) * ms],
            [f"{name} alone (its own resume)", percentile(sdk_samples, 0.5) * ms,
             percentile(sdk_samples, 0.99) * ms],
            ["added by the adapter (by rank)", percentile(added, 0.5) * ms,
             percentile(added, 0.99) * ms],
        ],
    )  # fmt: skip


def run(doc: str, name: str, main: Callable[[bool], Awaitable[None]]) -> None:
    """The benchmark's command line: ``--backend asyncio|trio|both``, ``--quick``."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--backend", choices=["asyncio", "trio", "both"], default="both")
    parser.add_argument("--quick", action="store_true", help="smaller counts, for a smoke run")
    args = parser.parse_args()
    for backend in ("asyncio", "trio") if args.backend == "both" else (args.backend,):
        print(f"{name} core on {backend}")
        anyio.run(main, args.quick, backend=backend)
