"""A core's stream is kept whole by the session runtime, as every adapter's is: what a
turn leaves open is closed, events that contradict the stream are dropped, and the
turn's usage steps come to the Master as one sum."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from rawp_adapter_sdk import SdkAdapter
from rawp_adapter_sdk.events import (
    CoreEvent,
    TextChunk,
    ThinkingChunk,
    ToolFinished,
    ToolProgress,
    ToolStarted,
    UsageReport,
)
from rawp_adapter_sdk.testing import CoreRun, FunctionCore

from rawp_adapters.frames import (
    SessionUsageFrame,
    TextDoneFrame,
    ThinkingDoneFrame,
    ToolInvokeRequestFrame,
    ToolInvokeResultFrame,
    ToolInvokeStreamFrame,
)
from rawp_adapters.testing import drive

pytestmark = pytest.mark.anyio


async def contradicting(prompt: str, run: CoreRun) -> AsyncIterator[CoreEvent]:
    yield ToolProgress("ghost", "x")
    yield ToolFinished("ghost")
    yield ToolStarted("call-1", "Bash", {})
    yield ToolStarted("call-1", "Bash", {})
    yield ToolFinished("call-1")
    yield ToolFinished("call-1")
    yield ToolStarted("call-1", "Bash", {})
    yield TextChunk(0, "Hel")
    yield TextChunk(0, "lo")
    yield ThinkingChunk(1, "th")
    yield ToolStarted("call-2", "Bash", {})
    yield UsageReport(input_tokens=10, output_tokens=2, cost_usd=0.5)
    yield UsageReport(input_tokens=5, cache_read_tokens=7)


async def test_a_core_stream_reaches_the_master_whole_and_without_contradictions(
    tmp_path: Path,
) -> None:
    adapter = SdkAdapter.for_core(FunctionCore(contradicting))
    async with drive(adapter, workspace=tmp_path) as d:
        turn = await d.prompt("go")
    requests = [f.payload.invocation_id for f in turn.of_type(ToolInvokeRequestFrame)]
    results = [
        (f.payload.invocation_id, f.payload.is_error) for f in turn.of_type(ToolInvokeResultFrame)
    ]
    assert requests == ["call-1", "call-2"]
    assert results == [("call-1", False), ("call-2", True)]
    assert turn.of_type(ToolInvokeStreamFrame) == []
    assert [f.payload.text for f in turn.of_type(TextDoneFrame)] == ["Hello"]
    assert [f.payload.text for f in turn.of_type(ThinkingDoneFrame)] == ["th"]
    (usage,) = turn.of_type(SessionUsageFrame)
    total = usage.payload
    assert (total.input_tokens, total.output_tokens, total.cache_read_tokens) == (15, 2, 7)
    assert total.cost_usd == 0.5
    assert total.cache_write_tokens is None
    end_usage = turn.end.payload.usage
    assert end_usage is not None
    assert (end_usage.input_tokens, end_usage.cost_usd) == (15, 0.5)
