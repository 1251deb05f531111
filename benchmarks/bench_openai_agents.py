"""Benchmarks of the OpenAI Agents SDK core (printed, never asserted).

    .venv/bin/python benchmarks/bench_openai_agents.py [--backend asyncio|trio|both] [--quick]

Everything runs against the scripted OpenAI-compatible server on 127.0.0.1
(``tests/support/llm_openai.py``), over HTTP like a real provider.

- frames/s of one streamed answer (``SLOW_STREAM <n> 0``: n text deltas, no delay):
  the core through a session of the ``sdk`` adapter, against the SDK alone reading the
  same stream (``Runner.run_streamed``, its own text delta events, no adapter): the
  ratio is what the adapter costs. The demo core (``delay_ms=0``) in the same run, for
  reference: it streams from memory, not from a server, so it is no baseline of the
  same stream.
- permission round trip of a gated ``write_file``: from the Master's allow to the
  write's ``tool.invoke.result`` (allow → the bridge → ``state.approve`` → the resumed
  run → its ``tool_output`` item → the frame), against the SDK alone from its resume
  (``Runner.run_streamed`` of the approved state) to the same item; the difference (by
  rank) is what the adapter adds.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner
from openai import AsyncOpenAI
from rawp_adapter_sdk import SdkAdapter
from rawp_core_openai_agents._tools import workspace_tools

from benchmarks._common import percentile, print_table, ratio
from rawp_adapters import Session, open_session
from rawp_adapters.frames import InteractionRequestFrame
from tests.support.llm_openai import DEFAULT_MODEL, ScriptedOpenAI

WRITE_PROMPT = 'CALL_TOOL write_file {"path": "bench.txt", "content": "hi"}'
TEXT_DELTA = "response.output_text.delta"
OFFLINE = RunConfig(tracing_disabled=True)


def _settings(llm: ScriptedOpenAI) -> dict[str, Any]:
    options = {
        "model": DEFAULT_MODEL,
        "base_url": llm.base_url,
        "api_key": "scripted",
        "max_retries": 0,
    }
    return {"core": "openai-agents", "core_options": options}


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


def _agent(client: AsyncOpenAI, workspace: Path) -> Agent[Any]:
    """The SDK alone, with the core's own ``write_file`` tool."""
    tools = workspace_tools(
        workspace, ["write_file"], gate_all=False, failed=lambda _: None, edited={}
    )
    model = OpenAIChatCompletionsModel(model=DEFAULT_MODEL, openai_client=client)
    return Agent(name="bench", model=model, tools=list(tools))


async def sdk_frames(agent: Agent[Any], deltas: int) -> float:
    """The SDK alone (asyncio only): its text delta events of the same stream per second."""
    await Runner.run(agent, "Say hello.", run_config=OFFLINE)
    events = 0
    started = time.perf_counter()
    result = Runner.run_streamed(agent, f"SLOW_STREAM {deltas} 0", run_config=OFFLINE)
    async for event in result.stream_events():
        if event.type == "raw_response_event":
            events += event.data.type == TEXT_DELTA
    return events / (time.perf_counter() - started)


async def _allow_to_result(session: Session) -> float:
    """One gated write: from the allow sent to its ``tool.invoke.result`` read."""
    allowed = took = 0.0
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


async def sdk_permission_turns(agent: Agent[Any], turns: int) -> list[float]:
    """The SDK alone: run to the interruption, approve, and from the resume to the
    tool's ``tool_output`` item (history kept)."""
    samples: list[float] = []
    history: list[Any] = []
    for _ in range(turns + 1):
        run_input: list[Any] = [*history, {"role": "user", "content": WRITE_PROMPT}]
        paused = Runner.run_streamed(agent, run_input, run_config=OFFLINE)
        async for _ in paused.stream_events():
            pass
        state = paused.to_state()
        for item in paused.interruptions:
            state.approve(item)
        allowed = time.perf_counter()
        resumed = Runner.run_streamed(agent, state, run_config=OFFLINE)
        async for event in resumed.stream_events():
            if event.type == "run_item_stream_event" and event.name == "tool_output":
                samples.append(time.perf_counter() - allowed)
        history = resumed.to_input_list()
    return samples[1:]


async def main(quick: bool) -> None:
    deltas, turns = (1_000, 20) if quick else (4_000, 40)
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
            ["openai-agents core, through the sdk adapter", core_rate, "1.00x"],
            ["openai-agents alone, same stream (asyncio)", sdk_rate, ratio(core_rate, sdk_rate)],
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
        f"gated write_file: from the allow to the tool's result ({turns} turns), ms",
        ["what", "p50", "p99"],
        [
            ["through the adapter", percentile(core_samples, 0.5) * ms,
             percentile(core_samples, 0.99) * ms],
            ["openai-agents alone (its own resume)", percentile(sdk_samples, 0.5) * ms,
             percentile(sdk_samples, 0.99) * ms],
            ["added by the adapter (by rank)", percentile(added, 0.5) * ms,
             percentile(added, 0.99) * ms],
        ],
    )  # fmt: skip


async def _on_asyncio(
    llm: ScriptedOpenAI, workspace: Path, deltas: int, turns: int
) -> tuple[float, list[float]]:
    """The SDK alone runs on asyncio only: in a thread of its own under trio."""

    async def measure() -> tuple[float, list[float]]:
        async with AsyncOpenAI(base_url=llm.base_url, api_key="scripted", max_retries=0) as client:
            agent = _agent(client, workspace)
            rate = await sdk_frames(agent, deltas)
            return rate, await sdk_permission_turns(agent, turns)

    return await anyio.to_thread.run_sync(lambda: anyio.run(measure, backend="asyncio"))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["asyncio", "trio", "both"], default="both")
    parser.add_argument("--quick", action="store_true", help="smaller counts, for a smoke run")
    args = parser.parse_args()
    for backend in ("asyncio", "trio") if args.backend == "both" else (args.backend,):
        print(f"openai-agents core on {backend}")
        anyio.run(main, args.quick, backend=backend)
