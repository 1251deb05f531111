"""Benchmarks of the pydantic-ai SDK core (printed, never asserted).

    .venv/bin/python benchmarks/bench_pydantic_ai.py [--backend asyncio|trio|both] [--quick]

Everything runs against the scripted OpenAI-compatible server on 127.0.0.1
(``tests/support/llm_openai.py``), over HTTP like a real provider.

- frames/s of one streamed answer (``SLOW_STREAM <n> 0``: n text deltas, no delay):
  the core through a session of the ``sdk`` adapter, against pydantic-ai alone reading
  the same stream (``run_stream_events``, its own events, no adapter): the ratio is what
  the adapter costs. The demo core (``delay_ms=0``) in the same run, for reference: it
  streams from memory, not from a server, so it is no baseline of the same stream.
- permission round trip of a gated ``write``: from the Master's allow to the write's
  ``tool.invoke.result`` (allow → the bridge → the resumed pydantic-ai run → its
  result event → the frame), against pydantic-ai alone from its resume to the same
  result event; the difference (by rank) is what the adapter adds.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults
from pydantic_ai.messages import FunctionToolResultEvent, PartDeltaEvent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from rawp_adapter_sdk import SdkAdapter
from rawp_core_pydantic_ai._tools import builtin_toolset

from benchmarks._common import percentile, print_table, ratio
from rawp_adapters import Session, open_session
from rawp_adapters.frames import InteractionRequestFrame
from tests.support.llm_openai import DEFAULT_MODEL, ScriptedOpenAI

WRITE_PROMPT = "WRITE_FILE bench.txt hi"


def _settings(llm: ScriptedOpenAI) -> dict[str, Any]:
    options = {"model": DEFAULT_MODEL, "base_url": llm.base_url, "max_retries": 0}
    return {"core": "pydantic-ai", "core_options": options}


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


async def core_frames(llm: ScriptedOpenAI, workspace: Path, deltas: int) -> float:
    adapter = SdkAdapter.from_settings(_settings(llm))
    async with open_session(adapter, workspace=workspace) as session:
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


def _agent(llm: ScriptedOpenAI, workspace: Path) -> Agent[None, str | DeferredToolRequests]:
    """pydantic-ai alone, with the core's own ``write`` tool."""
    provider = OpenAIProvider(base_url=llm.base_url, api_key="unused")
    return Agent(
        OpenAIChatModel(DEFAULT_MODEL, provider=provider),
        output_type=[str, DeferredToolRequests],
        toolsets=[builtin_toolset(workspace, ["write"])],
    )


async def sdk_frames(llm: ScriptedOpenAI, workspace: Path, deltas: int) -> float:
    """pydantic-ai alone (asyncio only): its events of the same stream per second."""
    agent = _agent(llm, workspace)
    await agent.run("Say hello.")
    events = 0
    started = time.perf_counter()
    async with agent.run_stream_events(f"SLOW_STREAM {deltas} 0") as stream:
        async for event in stream:
            events += isinstance(event, PartDeltaEvent)
    return events / (time.perf_counter() - started)


async def _allow_to_result(session: Session) -> float:
    """One gated write: from the allow sent to its ``tool.invoke.result`` read."""
    allowed = 0.0
    await session.send(session.control.prompt(WRITE_PROMPT))
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


async def core_permission_turns(llm: ScriptedOpenAI, workspace: Path, turns: int) -> list[float]:
    adapter = SdkAdapter.from_settings(_settings(llm))
    async with open_session(adapter, workspace=workspace) as session:
        await _idle(session)
        return [await _allow_to_result(session) for _ in range(turns + 1)][1:]


async def sdk_permission_turns(llm: ScriptedOpenAI, workspace: Path, turns: int) -> list[float]:
    """pydantic-ai alone: run to the deferred approval, approve, and from the resume to
    the tool's result event (history kept)."""
    agent = _agent(llm, workspace)
    samples: list[float] = []
    history: list[Any] = []
    for _ in range(turns + 1):
        paused = await agent.run(WRITE_PROMPT, message_history=history)
        assert isinstance(paused.output, DeferredToolRequests)
        approvals: dict[str, Any] = {call.tool_call_id: True for call in paused.output.approvals}
        allowed = time.perf_counter()
        async with agent.run_stream_events(
            message_history=paused.all_messages(),
            deferred_tool_results=DeferredToolResults(approvals=approvals),
        ) as stream:
            async for event in stream:
                if isinstance(event, FunctionToolResultEvent):
                    samples.append(time.perf_counter() - allowed)
            history = stream.all_messages()
    return samples[1:]


async def main(quick: bool) -> None:
    deltas, turns = (2_000, 30) if quick else (10_000, 200)
    with ScriptedOpenAI() as llm, tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        core_rate = await core_frames(llm, workspace, deltas)
        demo_rate = await demo_frames(workspace, turns)
        core_samples = await core_permission_turns(llm, workspace, turns)
    with ScriptedOpenAI() as llm, tempfile.TemporaryDirectory() as tmp:
        sdk_rate, sdk_samples = await _on_asyncio(llm, Path(tmp), deltas, turns)
    print_table(
        f"frames/s, one streamed answer of {deltas:,} deltas",
        ["what", "frames/s", "core ÷ it"],
        [
            ["pydantic-ai core, through the sdk adapter", core_rate, "1.00x"],
            ["pydantic-ai alone, same stream (asyncio)", sdk_rate, ratio(core_rate, sdk_rate)],
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
            ["pydantic-ai alone (its own resume)", percentile(sdk_samples, 0.5) * ms,
             percentile(sdk_samples, 0.99) * ms],
            ["added by the adapter (by rank)", percentile(added, 0.5) * ms,
             percentile(added, 0.99) * ms],
        ],
    )  # fmt: skip


async def _on_asyncio(
    llm: ScriptedOpenAI, workspace: Path, deltas: int, turns: int
) -> tuple[float, list[float]]:
    """pydantic-ai alone runs on asyncio only: in a thread of its own under trio."""

    async def measure() -> tuple[float, list[float]]:
        rate = await sdk_frames(llm, workspace, deltas)
        return rate, await sdk_permission_turns(llm, workspace, turns)

    return await anyio.to_thread.run_sync(lambda: anyio.run(measure, backend="asyncio"))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["asyncio", "trio", "both"], default="both")
    parser.add_argument("--quick", action="store_true", help="smaller counts, for a smoke run")
    args = parser.parse_args()
    for backend in ("asyncio", "trio") if args.backend == "both" else (args.backend,):
        print(f"pydantic-ai core on {backend}")
        anyio.run(main, args.quick, backend=backend)
