"""Benchmarks of the SDK adapter (printed, never asserted).

    .venv/bin/python benchmarks/bench_sdk.py [--backend asyncio|trio|both] [--quick]

- permission round trip inside one process: a core's permission callback → the
  ``agent.interaction.request`` frame → the host's allow → the callback returns;
  p50/p99 over 10k requests. Baseline: a bare two-task anyio Event round trip.
- frames/s: a core that streams text deltas as fast as it can, read by a host.
  Baseline: the same number of objects through a bare anyio memory object stream.
- memory per open, idle session on the demo core (tracemalloc).
- issue 12's check: both targets (p99 < 200 µs, >= 100k frames/s) in ``--runs`` (5) runs
  in a row, each run printed. A Claude core session
  adds its CLI process (about 220-250 MB RSS) on top.
  Baseline: an idle task waiting on an Event.
"""

from __future__ import annotations

import argparse
import gc
import tempfile
import time
import tracemalloc
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
import anyio.lowlevel
from rawp_adapter_sdk import (
    CoreEnvironment,
    CoreFeatures,
    PermissionCallback,
    PermissionRequest,
    SdkAdapter,
)
from rawp_adapter_sdk.events import CoreEvent, Stopped, TextChunk

from rawp_adapters import Session, open_session
from rawp_adapters.frames import InteractionRequestFrame

PERMISSION_TARGET_P99_US = 200.0
FRAMES_TARGET_PER_S = 100_000.0


class _BenchCore:
    """Asks ``permissions`` times in a row (timing each), or streams ``deltas`` deltas."""

    def __init__(self, *, permissions: int = 0, deltas: int = 0) -> None:
        self.permissions = permissions
        self.deltas = deltas
        self.samples: list[float] = []

    name = "bench"
    version = None
    features = CoreFeatures(tool_events=True, permission_requests=True)

    async def start(self, env: CoreEnvironment) -> None:
        del env

    async def cancel(self) -> None:
        return

    async def close(self) -> None:
        return

    async def run(self, prompt: str, permission: PermissionCallback) -> AsyncIterator[CoreEvent]:
        request = PermissionRequest(tool_name="Bash", tool_input={"command": "ls"})
        clock = time.perf_counter
        for _ in range(self.permissions):
            started = clock()
            await permission(request)
            self.samples.append(clock() - started)
        delta = TextChunk(0, "x")
        for _ in range(self.deltas):
            yield delta
        yield Stopped()


async def _run_one_turn(session: Session, *, answer: bool) -> int:
    """Prompt once and read frames until the turn ends; the frames of the turn."""
    frames = 0
    async with anyio.create_task_group() as tg:

        async def read() -> None:
            nonlocal frames
            async for frame in session:
                frames += 1
                # Comparing type strings: isinstance on pydantic models costs ~1 µs.
                if answer and frame.type == "agent.interaction.request":
                    assert isinstance(frame, InteractionRequestFrame)
                    await session.send(session.control.allow(frame.payload.interaction_id))
                elif frame.type == "session.turn.end":
                    tg.cancel_scope.cancel()

        tg.start_soon(read)
        await session.send(session.control.prompt("go"))
    return frames


def _percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def bench_permission(workspace: Path, count: int) -> tuple[float, float]:
    core = _BenchCore(permissions=count)
    async with open_session(SdkAdapter.for_core(core), workspace=workspace) as session:
        await _run_one_turn(session, answer=True)
    warm = core.samples[count // 20 :]
    return _percentile(warm, 0.5) * 1e6, _percentile(warm, 0.99) * 1e6


async def baseline_event_round_trip(count: int) -> tuple[float, float]:
    """One task sets "ping" and waits for "pong"; another answers: fresh events each time."""
    samples: list[float] = []
    events = {"ping": anyio.Event(), "pong": anyio.Event()}

    async def answerer() -> None:
        for _ in range(count):
            await events["ping"].wait()
            events["ping"] = anyio.Event()
            events["pong"].set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(answerer)
        for _ in range(count):
            started = time.perf_counter()
            pong = events["pong"]
            events["ping"].set()
            await pong.wait()
            events["pong"] = anyio.Event()
            samples.append(time.perf_counter() - started)
    warm = samples[count // 20 :]
    return _percentile(warm, 0.5) * 1e6, _percentile(warm, 0.99) * 1e6


async def bench_frames(workspace: Path, deltas: int) -> float:
    core = _BenchCore(deltas=deltas)
    async with open_session(SdkAdapter.for_core(core), workspace=workspace) as session:
        async for frame in session:  # capabilities and the idle state
            if frame.type == "agent.state.changed":
                break
        started = time.perf_counter()
        frames = await _run_one_turn(session, answer=False)
        elapsed = time.perf_counter() - started
    return frames / elapsed


async def baseline_stream(items: int) -> float:
    send, receive = anyio.create_memory_object_stream[object](1024)
    started = time.perf_counter()

    async def produce() -> None:
        async with send:
            for _ in range(items):
                await send.send(items)

    async with anyio.create_task_group() as tg:
        tg.start_soon(produce)
        async with receive:
            async for _ in receive:
                pass
    return items / (time.perf_counter() - started)


async def bench_memory(workspace: Path, sessions: int) -> float:
    """Bytes (tracemalloc) per open, idle session on the demo core."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    async with AsyncExitStack() as stack:
        for _ in range(sessions):
            adapter = SdkAdapter.from_settings({"core": "demo"})
            await stack.enter_async_context(open_session(adapter, workspace=workspace))
        gc.collect()
        traced = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return traced / sessions


async def baseline_memory(tasks: int) -> float:
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    events = [anyio.Event() for _ in range(tasks)]
    async with anyio.create_task_group() as tg:
        for event in events:
            tg.start_soon(event.wait)
        await anyio.lowlevel.checkpoint()
        traced = tracemalloc.get_traced_memory()[0] - before
        for event in events:
            event.set()
    tracemalloc.stop()
    return traced / tasks


async def main(quick: bool) -> None:
    permissions, deltas, sessions = (2_000, 50_000, 50) if quick else (10_000, 200_000, 200)
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        p50, p99 = await bench_permission(workspace, permissions)
        base50, base99 = await baseline_event_round_trip(permissions)
        print(f"  permission round trip ({permissions} requests)")
        print(f"    adapter   p50 {p50:8.1f} µs   p99 {p99:8.1f} µs   (target p99 < 200 µs)")
        print(
            f"    baseline  p50 {base50:8.1f} µs   p99 {base99:8.1f} µs   (bare Event round trip)"
        )
        print(f"    ratio     p50 {p50 / base50:8.1f}x     p99 {p99 / base99:8.1f}x")
        print(f"    p99 vs target: {p99 / PERMISSION_TARGET_P99_US:.2f} of the budget")

        rate = await bench_frames(workspace, deltas)
        base_rate = await baseline_stream(deltas)
        print(f"  frames/s ({deltas} text deltas)")
        print(f"    adapter   {rate:12,.0f} frames/s   (target >= 100,000)")
        print(f"    baseline  {base_rate:12,.0f} items/s    (bare memory object stream)")
        print(f"    ratio     {rate / base_rate:12.2f}x")
        print(f"    vs target {rate / FRAMES_TARGET_PER_S:12.2f}x")

        per_session = await bench_memory(workspace, sessions)
        per_task = await baseline_memory(sessions)
        print(f"  memory per open session ({sessions} idle demo-core sessions)")
        print(f"    adapter   {per_session / 1024:8.1f} KiB")
        print(f"    baseline  {per_task / 1024:8.1f} KiB   (an idle task waiting on an Event)")
        print(f"    ratio     {per_session / per_task:8.1f}x")


async def runs_in_a_row(runs: int, quick: bool) -> None:
    """Issue 12's check: both targets met in every one of ``runs`` runs in a row."""
    permissions, deltas = (2_000, 50_000) if quick else (10_000, 200_000)
    met = 0
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        print(f"  {runs} runs in a row (targets: p99 < 200 µs, >= 100,000 frames/s)")
        for run in range(1, runs + 1):
            _, p99 = await bench_permission(workspace, permissions)
            rate = await bench_frames(workspace, deltas)
            ok = p99 < PERMISSION_TARGET_P99_US and rate >= FRAMES_TARGET_PER_S
            met += ok
            verdict = "met" if ok else "MISSED"
            print(f"    run {run}: p99 {p99:8.1f} µs   {rate:10,.0f} frames/s   {verdict}")
    print(f"    targets met in {met} of {runs} runs")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["asyncio", "trio", "both"], default="both")
    parser.add_argument("--quick", action="store_true", help="smaller counts, for a smoke run")
    parser.add_argument("--runs", type=int, default=5, help="runs in a row of the target check")
    args = parser.parse_args()
    for backend in ("asyncio", "trio") if args.backend == "both" else (args.backend,):
        print(f"SDK adapter on {backend}")
        anyio.run(main, args.quick, backend=backend)
        anyio.run(runs_in_a_row, args.runs, args.quick, backend=backend)
