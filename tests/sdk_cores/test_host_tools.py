"""The Master's published tools as each SDK core's own tools: the model calls one, the
session asks the Master (permission, then the call), and the model sees its answer, a
failed one as a failed result."""

from __future__ import annotations

from pathlib import Path

import pytest

from rawp_adapters.frames import InteractionRequestFrame, ToolInvokeResultFrame
from rawp_adapters.testing import drive
from tests.support.core_scenarios import ScriptedCore, host_call_started
from tests.support.llm_openai import TOOL_SAID, ScriptedOpenAI, offered_tools

pytestmark = pytest.mark.anyio

WAIT_S = 60.0


async def test_a_published_host_tool_is_offered_to_the_model_and_its_call_goes_to_the_master(
    scripted_core: ScriptedCore, llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    async with drive(scripted_core.adapter(llm), workspace=tmp_path, timeout=WAIT_S) as d:
        start, request = await host_call_started(d)
        await d.send(d.control.tool_result(request.payload.invocation_id, "hi back"))
        turn = await d.wait_turn(start.payload.turn_id)
    assert "echo" in offered_tools(llm.requests[0])
    assert request.payload.input == {"text": "hi"}
    (asked,) = turn.of_type(InteractionRequestFrame)
    assert asked.payload.context.tool_call_id == request.payload.invocation_id
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert result.payload.invocation_id == request.payload.invocation_id
    assert result.payload.resolution == "answered"
    assert f"{TOOL_SAID}hi back" in turn.text
    assert turn.stop_reason == "end_turn"


async def test_a_host_tool_the_master_fails_is_a_failed_result_for_the_model(
    scripted_core: ScriptedCore, llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    async with drive(scripted_core.adapter(llm), workspace=tmp_path, timeout=WAIT_S) as d:
        start, request = await host_call_started(d)
        await d.send(
            d.control.tool_result(request.payload.invocation_id, "echo broke", is_error=True)
        )
        turn = await d.wait_turn(start.payload.turn_id)
    assert "echo broke" in turn.text, "the model saw the failure"
    assert turn.stop_reason == "end_turn"
