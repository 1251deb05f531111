"""Each SDK core as the parent of a delegation: its model calls the Master's
``delegate`` tool (offered as the SDK's own function tool), a sub-agent on the same core
runs the task's turn, and its answer is the tool's result the parent's model sees."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rawp_adapters import ClientFrame
from rawp_adapters.frames import ToolInvokeResultFrame, TurnEndFrame
from rawp_adapters.host import Delegation, HostTools, allow_all
from tests.host.serving import serve_prompt
from tests.support.core_scenarios import ScriptedCore
from tests.support.llm_openai import (
    CALL_TOOL,
    DEFAULT_TEXT,
    TOOL_SAID,
    ScriptedOpenAI,
    last_user_text,
    offered_tools,
)

pytestmark = pytest.mark.anyio

TOOL = "delegate"
SUB_TASK = "Say hello."
DELEGATING = f"{CALL_TOOL} {TOOL} " + json.dumps({"description": "greet", "prompt": SUB_TASK})


async def test_the_cores_model_delegates_a_task_and_sees_the_sub_agents_answer(
    scripted_core: ScriptedCore, llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    sub_agent_frames: list[ClientFrame] = []
    delegation = Delegation(scripted_core.agent(llm), name=TOOL, on_frame=sub_agent_frames.append)
    served = await serve_prompt(
        scripted_core.adapter(llm),
        tmp_path,
        HostTools([delegation]),
        allow_all,
        prompt=DELEGATING,
        timeout=60,
    )
    [result] = served.of_type(ToolInvokeResultFrame)
    assert (result.payload.output_type, result.payload.output) == ("agent_result", DEFAULT_TEXT)
    assert result.payload.resolution == "answered"
    [end] = served.of_type(TurnEndFrame)
    assert end.payload.stop_reason == "end_turn"
    assert f"{TOOL_SAID}{DEFAULT_TEXT}" in served.text, "the parent's model got the answer"
    assert TOOL in offered_tools(llm.requests[0]), "the core offered the Master's tool"
    asked = [last_user_text(r) for r in llm.requests]
    assert [t for t in asked if SUB_TASK in t and CALL_TOOL not in t], "the sub-agent asked"
    assert sub_agent_frames[-1].type == "session.closed"
