"""The Master's published tools as the Copilot session's own tools: the model calls one,
the session asks the Master (permission, then the call), and the model sees its answer."""

from __future__ import annotations

from pathlib import Path

import pytest

from rawp_adapters.frames import (
    InteractionRequestFrame,
    ToolCatalogUpdatedFrame,
    ToolInvokeRequestFrame,
    ToolInvokeResultFrame,
)
from tests.copilot.sessions import copilot_session
from tests.support.llm_openai import TOOL_SAID, ScriptedOpenAI, offered_tools

pytestmark = pytest.mark.anyio

ECHO = {
    "name": "echo",
    "description": "Says the text back.",
    "input_schema": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
}
CALL_ECHO = 'CALL_TOOL echo {"text": "hi"}'


async def test_a_published_host_tool_is_offered_to_the_model_and_its_call_goes_to_the_master(
    llm: ScriptedOpenAI, copilot_cli: Path, tmp_path: Path
) -> None:
    async with copilot_session(llm, copilot_cli, tmp_path) as d:
        await d.send(d.control.publish_tools([ECHO]))
        await d.wait_for(ToolCatalogUpdatedFrame)
        start = await d.start_prompt(CALL_ECHO)
        request = await d.wait_for(
            ToolInvokeRequestFrame, where=lambda f: f.payload.executor == "master"
        )
        await d.send(d.control.tool_result(request.payload.invocation_id, "hi back"))
        turn = await d.wait_turn(start.payload.turn_id)
    assert set(offered_tools(llm.requests[0])) == {"write", "echo"}
    assert request.payload.input == {"text": "hi"}
    (asked,) = turn.of_type(InteractionRequestFrame)
    assert asked.payload.context.tool_call_id == request.payload.invocation_id
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert result.payload.resolution == "answered"
    assert f"{TOOL_SAID}hi back" in turn.text
    assert turn.stop_reason == "end_turn"


async def test_a_host_tool_the_master_fails_is_a_failed_result_for_the_model(
    llm: ScriptedOpenAI, copilot_cli: Path, tmp_path: Path
) -> None:
    async with copilot_session(llm, copilot_cli, tmp_path) as d:
        await d.send(d.control.publish_tools([ECHO]))
        await d.wait_for(ToolCatalogUpdatedFrame)
        start = await d.start_prompt(CALL_ECHO)
        request = await d.wait_for(
            ToolInvokeRequestFrame, where=lambda f: f.payload.executor == "master"
        )
        await d.send(
            d.control.tool_result(request.payload.invocation_id, "echo broke", is_error=True)
        )
        turn = await d.wait_turn(start.payload.turn_id)
    assert "echo broke" in turn.text
    assert turn.stop_reason == "end_turn"
