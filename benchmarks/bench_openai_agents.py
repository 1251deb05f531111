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
- a question's round trip in the SDK: from the paused run's state taken (``to_state``
  returned) to the run streamed again from it (``Runner.run_streamed`` of a
  ``RunState``), through the adapter and the Master against the SDK alone approving at
  once (``state.approve`` is in both).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, RunState
from agents.result import RunResultStreaming
from openai import AsyncOpenAI
from rawp_core_openai_agents._tools import workspace_tools

from benchmarks._model_server import ModelServer
from benchmarks._sdk_cores import Lap, Marks, Stopwatch, compare, mark_calls, run
from tests.support.llm_openai import DEFAULT_MODEL

WRITE_PROMPT = 'CALL_TOOL write_file {"path": "bench.txt", "content": "hi"}'
TEXT_DELTA = "response.output_text.delta"
OFFLINE = RunConfig(tracing_disabled=True)


def _settings(llm: ModelServer) -> dict[str, Any]:
    options = {
        "model": DEFAULT_MODEL,
        "base_url": llm.base_url,
        "api_key": "scripted",
        "max_retries": 0,
    }
    return {"core": "openai-agents", "core_options": options}


def _agent(client: AsyncOpenAI, workspace: Path) -> Agent[Any]:
    """The SDK alone, with the core's own ``write_file`` tool."""
    tools = workspace_tools(
        workspace, ["write_file"], gate_all=False, failed=lambda _: None, edited={}
    )
    model = OpenAIChatCompletionsModel(model=DEFAULT_MODEL, openai_client=client)
    return Agent(name="bench", model=model, tools=list(tools))


class _Alone:
    """openai-agents alone (asyncio only), with the core's own ``write_file`` tool."""

    def __init__(self, client: AsyncOpenAI, workspace: Path) -> None:
        self._agent = _agent(client, workspace)
        self._history: list[Any] = []

    async def warm(self) -> None:
        await Runner.run(self._agent, "Say hello.", run_config=OFFLINE)

    async def stream(self, deltas: int) -> int:
        """Its text delta events of the same stream."""
        events = 0
        result = Runner.run_streamed(self._agent, f"SLOW_STREAM {deltas} 0", run_config=OFFLINE)
        async for event in result.stream_events():
            if event.type == "raw_response_event":
                events += event.data.type == TEXT_DELTA
        return events

    async def permission_turn(self) -> Lap:
        """Run to the interruption, approve, and from the resume to the tool's
        ``tool_output`` item (history kept)."""
        run_input: list[Any] = [*self._history, {"role": "user", "content": WRITE_PROMPT}]
        paused = Runner.run_streamed(self._agent, run_input, run_config=OFFLINE)
        async for _ in paused.stream_events():
            pass
        state = paused.to_state()
        for item in paused.interruptions:
            state.approve(item)
        took = Lap(0.0, 0.0)
        clock = Stopwatch()
        resumed = Runner.run_streamed(self._agent, state, run_config=OFFLINE)
        async for event in resumed.stream_events():
            if event.type == "run_item_stream_event" and event.name == "tool_output":
                took = clock.lap()
        self._history = resumed.to_input_list()
        return took


def _marked() -> Marks:
    """The SDK's pause: the paused run's state taken; its resume: the run streamed again
    from a state."""
    marks = Marks()

    def resumed(_agent: Any, run_input: Any, *args: Any, **kwargs: Any) -> None:
        if isinstance(run_input, RunState):
            marks.answered()

    mark_calls(RunResultStreaming, "to_state", lambda *_, **__: marks.asked(), after=True)
    mark_calls(Runner, "run_streamed", resumed)
    return marks


@asynccontextmanager
async def _alone(llm: ModelServer, workspace: Path) -> AsyncIterator[_Alone]:
    async with AsyncOpenAI(base_url=llm.base_url, api_key="scripted", max_retries=0) as client:
        yield _Alone(client, workspace)


async def main(quick: bool) -> None:
    deltas, turns = (1_000, 20) if quick else (4_000, 200)
    await compare(
        "openai-agents",
        _settings,
        _alone,
        deltas=deltas,
        turns=turns,
        write_prompt=WRITE_PROMPT,
        marks=_marked(),
    )


if __name__ == "__main__":
    run(__doc__, "openai-agents", main)
