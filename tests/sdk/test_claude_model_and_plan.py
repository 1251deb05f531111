"""Live model changes and the agent's plan with the real Claude Agent SDK, offline: the
scripted model says which model it is (``WHICH_MODEL``) and calls the CLI's task tools
(``CALL_TOOL TaskCreate …``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rawp_adapters.frames import (
    ModelChangedFrame,
    ModelListFrame,
    PlanUpdatedFrame,
    SessionCapabilitiesFrame,
    SessionErrorFrame,
)
from tests.sdk.claude_sessions import claude_session
from tests.support.claude import needs_claude_sdk
from tests.support.llm_anthropic import DEFAULT_MODEL, MODEL_SAYS, ScriptedAnthropic

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.claude,
    needs_claude_sdk,
]


async def test_a_model_switch_to_a_listed_model_answers_with_it_and_an_unknown_one_is_rejected(
    api: ScriptedAnthropic, tmp_path: Path
) -> None:
    async with claude_session(api, tmp_path) as run:
        d = run.driver
        before = await d.prompt("WHICH_MODEL")
        await d.send(d.control.list_models())
        listed = await d.wait_for(ModelListFrame)
        second = next(m.id for m in listed.payload.models if m.id != DEFAULT_MODEL)
        await d.send(d.control.set_model(second))
        changed = await d.wait_for(ModelChangedFrame)
        after = await d.prompt("WHICH_MODEL")
        await d.send(d.control.set_model("no-such-model"))
        rejected = await d.wait_for(SessionErrorFrame)
        still = await d.prompt("WHICH_MODEL")
    caps = d.of_type(SessionCapabilitiesFrame)[0].payload
    assert caps.agent is not None
    assert caps.agent.model == DEFAULT_MODEL
    features = caps.features
    assert (features.model_change, features.model_list, features.thinking_change) == (
        True,
        True,
        False,
    )
    assert before.text == MODEL_SAYS.format(model=DEFAULT_MODEL)
    assert changed.payload.model == second
    assert after.text == MODEL_SAYS.format(model=second)
    assert rejected.payload.error_code == "REJECTED"
    assert "no-such-model" in rejected.payload.message
    assert still.text == MODEL_SAYS.format(model=second)


async def test_a_thinking_level_change_is_unsupported(
    api: ScriptedAnthropic, tmp_path: Path
) -> None:
    async with claude_session(api, tmp_path) as run:
        d = run.driver
        await d.send(d.control.set_model(thinking_level="high"))
        error = await d.wait_for(SessionErrorFrame)
    assert error.payload.error_code == "UNSUPPORTED"


async def test_the_agents_task_list_reaches_the_master_as_its_plan(
    api: ScriptedAnthropic, tmp_path: Path
) -> None:
    async with claude_session(api, tmp_path) as run:
        d = run.driver
        created = await d.prompt(
            'CALL_TOOL TaskCreate {"subject": "write tests", "description": "d"}\n'
            'CALL_TOOL TaskCreate {"subject": "ship it", "description": "d"}'
        )
        updated = await d.prompt('CALL_TOOL TaskUpdate {"taskId": "1", "status": "completed"}')
    assert d.of_type(SessionCapabilitiesFrame)[0].payload.features.plans
    plans = created.of_type(PlanUpdatedFrame)
    assert [[e.content for e in p.payload.entries] for p in plans] == [
        ["write tests"],
        ["write tests", "ship it"],
    ]
    assert plans[-1].payload.turn_id == created.turn_id
    (plan,) = updated.of_type(PlanUpdatedFrame)
    assert [(e.content, e.status) for e in plan.payload.entries] == [
        ("write tests", "completed"),
        ("ship it", "pending"),
    ]
