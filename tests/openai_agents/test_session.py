"""What the openai-agents core takes as a session: the one-line error of an SDK that is
not installed, and tracing only when asked (its capabilities, model switch and the
scenarios every core shares are in ``tests/sdk_cores/``)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agents.tracing import Span, Trace, TracingProcessor, set_trace_processors
from rawp_adapter_sdk import CoreEnvironment, CoreError
from rawp_core_openai_agents import OpenAIAgentsCore

from rawp_adapters.plugins import get_logger
from rawp_adapters.testing import drive
from tests.openai_agents.conftest import core
from tests.support.llm_openai import ScriptedOpenAI

pytestmark = pytest.mark.anyio


async def test_an_sdk_that_is_not_installed_is_one_line_naming_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)
    monkeypatch.setitem(sys.modules, "rawp_core_openai_agents._tools", None)
    env = CoreEnvironment(workspace=tmp_path, session_id="s", log=get_logger("test"))
    with pytest.raises(CoreError) as raised:
        await OpenAIAgentsCore(api_key="k").start(env)
    assert raised.value.fatal
    assert "\n" not in raised.value.message
    assert "pip install rawp-core-openai-agents" in raised.value.message


class Recorder(TracingProcessor):
    """Takes the place of the SDK's exporter: the traces that would have gone out."""

    def __init__(self) -> None:
        self.traces: list[str] = []

    def on_trace_start(self, trace: Trace) -> None:
        self.traces.append(trace.name)

    def on_trace_end(self, trace: Trace) -> None:
        pass

    def on_span_start(self, span: Span[Any]) -> None:
        pass

    def on_span_end(self, span: Span[Any]) -> None:
        pass

    def shutdown(self) -> None:
        pass

    def force_flush(self) -> None:
        pass


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    """The SDK's trace processors replaced by a recorder (and by none afterwards: no
    test exports traces)."""
    recording = Recorder()
    set_trace_processors([recording])
    yield recording
    set_trace_processors([])


async def test_traces_are_made_only_when_the_tracing_option_turns_them_on(
    llm: ScriptedOpenAI, recorder: Recorder, tmp_path: Path
) -> None:
    async with drive(core(llm), workspace=tmp_path) as d:
        await d.prompt("hello")
    untraced = list(recorder.traces)
    async with drive(core(llm, tracing=True), workspace=tmp_path) as d:
        await d.prompt("hello")
    assert untraced == []
    assert len(recorder.traces) == 1
