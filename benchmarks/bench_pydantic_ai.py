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
- a question's round trip in pydantic-ai: from its ``DeferredToolRequests`` made (the
  run pausing for approval) to the run resumed with the answers
  (``run_stream_events`` given ``deferred_tool_results``), through the adapter and the
  Master against pydantic-ai alone resuming at once. Both pause in a streamed run
  (``run_stream_events``, as the core runs every step): the end of a streamed run costs
  pydantic-ai about 0.1 ms more than a plain ``run``, which is the SDK's, not the adapter's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults
from pydantic_ai.messages import FunctionToolResultEvent, PartDeltaEvent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from rawp_core_pydantic_ai._tools import builtin_toolset

from benchmarks._model_server import ModelServer
from benchmarks._sdk_cores import Lap, Marks, Stopwatch, compare, mark_calls, run
from tests.support.llm_openai import DEFAULT_MODEL

WRITE_PROMPT = "WRITE_FILE bench.txt hi"


def _settings(llm: ModelServer) -> dict[str, Any]:
    options = {"model": DEFAULT_MODEL, "base_url": llm.base_url, "max_retries": 0}
    return {"core": "pydantic-ai", "core_options": options}


def _agent(llm: ModelServer, workspace: Path) -> Agent[None, str | DeferredToolRequests]:
    """pydantic-ai alone, with the core's own ``write`` tool."""
    provider = OpenAIProvider(base_url=llm.base_url, api_key="unused")
    return Agent(
        OpenAIChatModel(DEFAULT_MODEL, provider=provider),
        output_type=[str, DeferredToolRequests],
        toolsets=[builtin_toolset(workspace, ["write"])],
    )


class _Alone:
    """pydantic-ai alone (asyncio only), with the core's own ``write`` tool."""

    def __init__(self, llm: ModelServer, workspace: Path) -> None:
        self._agent = _agent(llm, workspace)
        self._history: list[Any] = []

    async def warm(self) -> None:
        await self._agent.run("Say hello.")

    async def stream(self, deltas: int) -> int:
        """Its delta events of the same stream."""
        events = 0
        async with self._agent.run_stream_events(f"SLOW_STREAM {deltas} 0") as stream:
            async for event in stream:
                events += isinstance(event, PartDeltaEvent)
        return events

    async def permission_turn(self) -> Lap:
        """Run streamed to the deferred approval (as the core runs it), approve, and from
        the resume to the tool's result event (history kept)."""
        async with self._agent.run_stream_events(
            WRITE_PROMPT, message_history=self._history
        ) as paused:
            async for _ in paused:
                pass
        assert paused.result is not None
        requests = paused.result.output
        assert isinstance(requests, DeferredToolRequests)
        approvals: dict[str, Any] = {call.tool_call_id: True for call in requests.approvals}
        took = Lap(0.0, 0.0)
        clock = Stopwatch()
        async with self._agent.run_stream_events(
            message_history=paused.all_messages(),
            deferred_tool_results=DeferredToolResults(approvals=approvals),
        ) as stream:
            async for event in stream:
                if isinstance(event, FunctionToolResultEvent):
                    took = clock.lap()
            self._history = stream.all_messages()
        return took


def _marked() -> Marks:
    """pydantic-ai's pause: its ``DeferredToolRequests`` made; its resume: a run given
    ``deferred_tool_results``."""
    marks = Marks()

    def resumed(*_: Any, deferred_tool_results: Any = None, **__: Any) -> None:
        if deferred_tool_results is not None:
            marks.answered()

    mark_calls(DeferredToolRequests, "__init__", lambda *_, **__: marks.asked())
    mark_calls(Agent, "run_stream_events", resumed)
    return marks


@asynccontextmanager
async def _alone(llm: ModelServer, workspace: Path) -> AsyncIterator[_Alone]:
    yield _Alone(llm, workspace)


async def main(quick: bool) -> None:
    deltas, turns = (2_000, 30) if quick else (4_000, 200)
    await compare(
        "pydantic-ai",
        _settings,
        _alone,
        deltas=deltas,
        turns=turns,
        write_prompt=WRITE_PROMPT,
        marks=_marked(),
    )


if __name__ == "__main__":
    run(__doc__, "pydantic-ai", main)
