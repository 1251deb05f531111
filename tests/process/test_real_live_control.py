"""Steering, follow-up, model and thinking changes and plans with the real omp and pi.

Both agents take ``steer`` and ``follow_up`` into the run of the turn, list their models
and switch between them, and set their thinking level; omp alone has a todo list
(``set_todos``, its ``todo`` tool). Every stream is checked by ``drive``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rawp_adapters.frames import (
    ModelChangedFrame,
    ModelListFrame,
    PlanEntry,
    PlanUpdatedFrame,
    SessionCapabilitiesFrame,
    SessionErrorFrame,
    ToolInvokeRequestFrame,
    ToolInvokeResultFrame,
    TurnEndFrame,
    TurnStartFrame,
)
from rawp_adapters.testing import allow_all, drive
from tests.process.real_peers import PEERS, TIMEOUT, only, peer_adapter
from tests.support.llm_openai import (
    CALL_TOOL,
    DEFAULT_TEXT,
    MODEL_SAYS,
    NAME_MODEL,
    ScriptedOpenAI,
)
from tests.support.peers import MODEL_ID, PROVIDER, PeerName

pytestmark = [pytest.mark.anyio, pytest.mark.peers]

SECOND_MODEL = "fake-model-2"


@pytest.fixture(scope="module")
def llm() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI() as server:
        yield server


@pytest.mark.parametrize("name", PEERS)
async def test_a_steer_and_a_follow_up_during_a_tool_call_run_in_the_same_turn(
    name: PeerName, llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    adapter, workspace = peer_adapter(name, llm, tmp_path)
    async with drive(adapter, workspace=workspace, policy=allow_all, timeout=TIMEOUT) as d:
        start = await d.start_prompt("RUN_BASH sleep 1 && echo slept")
        await d.wait_for(ToolInvokeRequestFrame)
        await d.send(d.control.steer("Say hello."))
        await d.send(d.control.follow_up(NAME_MODEL))
        turn = await d.wait_turn(start.payload.turn_id)
        after = await d.prompt("Say hello.")

    (caps,) = d.of_type(SessionCapabilitiesFrame)
    assert caps.payload.features.steering
    assert caps.payload.features.follow_up
    assert not d.of_type(SessionErrorFrame)
    assert turn.stop_reason == "end_turn"
    # omp backgrounds a running command when a message comes, pi lets it finish.
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert not result.payload.is_error
    # The model's next call takes the steer (its last user message), then the follow-up.
    text = turn.text
    assert text.index(DEFAULT_TEXT) < text.index(f"{MODEL_SAYS}{MODEL_ID}."), text
    assert len(d.of_type(TurnStartFrame)) == len(d.of_type(TurnEndFrame)) == 2
    assert after.text == DEFAULT_TEXT, "nothing of the steered turn is left over"


@pytest.mark.parametrize("name", PEERS)
async def test_the_model_switches_to_a_second_model_that_then_answers_and_an_unknown_is_rejected(
    name: PeerName, llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    adapter, workspace = peer_adapter(
        name, llm, tmp_path, peer={"extra_models": [SECOND_MODEL], "reasoning": True}
    )
    second = f"{PROVIDER}/{SECOND_MODEL}"
    async with drive(adapter, workspace=workspace, timeout=TIMEOUT) as d:
        await d.send(d.control.list_models())
        listed = await d.wait_for(ModelListFrame)
        await d.send(d.control.set_model(second, thinking_level="high"))
        changed = await d.wait_for(ModelChangedFrame)
        switched = await d.prompt(NAME_MODEL)
        await d.send(d.control.set_model(f"{PROVIDER}/no-such-model"))
        unknown = await d.wait_for(SessionErrorFrame)
        mark = len(d.frames)
        await d.send(d.control.set_model(None, thinking_level="low"))
        lowered = await d.wait_for(ModelChangedFrame, after=mark)
        still = await d.prompt(NAME_MODEL)

    (caps,) = d.of_type(SessionCapabilitiesFrame)
    features = caps.payload.features
    assert features.model_change
    assert features.model_list
    assert features.thinking_change
    assert caps.payload.agent is not None
    assert caps.payload.agent.model == f"{PROVIDER}/{MODEL_ID}"
    assert caps.payload.agent.thinking_level is not None
    assert [m.id for m in listed.payload.models] == [f"{PROVIDER}/{MODEL_ID}", second]
    assert (changed.payload.model, changed.payload.thinking_level) == (second, "high")
    assert switched.text == f"{MODEL_SAYS}{SECOND_MODEL}."
    assert unknown.payload.error_code == "REJECTED"
    assert "no-such-model" in unknown.payload.message
    assert (lowered.payload.model, lowered.payload.thinking_level) == (second, "low")
    assert still.text == f"{MODEL_SAYS}{SECOND_MODEL}.", "the session went on with its model"


@pytest.mark.parametrize("name", PEERS)
async def test_a_thinking_level_the_agent_does_not_know_is_rejected(
    name: PeerName, llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    adapter, workspace = peer_adapter(name, llm, tmp_path, peer={"reasoning": True})
    async with drive(adapter, workspace=workspace, timeout=TIMEOUT) as d:
        await d.send(d.control.set_model(None, thinking_level="enormous"))
        error = await d.wait_for(SessionErrorFrame)
        after = await d.prompt("Say hello.")
    assert error.payload.error_code == "REJECTED"
    assert not d.of_type(ModelChangedFrame)
    assert after.text == DEFAULT_TEXT


@pytest.mark.parametrize("name", PEERS)
async def test_a_model_change_with_a_level_the_agent_does_not_know_changes_nothing(
    name: PeerName, llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    adapter, workspace = peer_adapter(
        name, llm, tmp_path, peer={"extra_models": [SECOND_MODEL], "reasoning": True}
    )
    async with drive(adapter, workspace=workspace, timeout=TIMEOUT) as d:
        await d.send(d.control.set_model(f"{PROVIDER}/{SECOND_MODEL}", thinking_level="enormous"))
        error = await d.wait_for(SessionErrorFrame)
        after = await d.prompt(NAME_MODEL)
    assert error.payload.error_code == "REJECTED"
    assert not d.of_type(ModelChangedFrame)
    assert after.text == f"{MODEL_SAYS}{MODEL_ID}.", "the first model still answers"


@pytest.mark.parametrize("name", only("omp"))
async def test_a_seeded_plan_and_omps_own_todo_updates_reach_the_master(
    name: PeerName, llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    adapter, workspace = peer_adapter(name, llm, tmp_path)
    plan = [
        PlanEntry(content="write the parser", phase="Build"),
        PlanEntry(content="test the parser", phase="Check"),
    ]
    async with drive(adapter, workspace=workspace, timeout=TIMEOUT) as d:
        await d.send(d.control.set_plan(plan))
        seeded = await d.wait_for(PlanUpdatedFrame)
        turn = await d.prompt(f'{CALL_TOOL} todo {{"op": "start", "task": "write the parser"}}')

    (caps,) = d.of_type(SessionCapabilitiesFrame)
    assert caps.payload.features.plans
    assert caps.payload.features.plan_seeding
    assert seeded.payload.entries == plan
    assert seeded.payload.turn_id is None
    updates = turn.of_type(PlanUpdatedFrame)
    assert updates, "the agent's todo update reached the Master"
    assert updates[0].payload.turn_id == turn.end.payload.turn_id
    assert [(e.content, e.status, e.phase) for e in updates[0].payload.entries] == [
        ("write the parser", "in_progress", "Build"),
        ("test the parser", "pending", "Check"),
    ]


@pytest.mark.parametrize("name", only("pi"))
async def test_pi_has_no_plan_and_seeding_one_is_refused_as_unsupported(
    name: PeerName, llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    adapter, workspace = peer_adapter(name, llm, tmp_path)
    async with drive(adapter, workspace=workspace, timeout=TIMEOUT) as d:
        await d.send(d.control.set_plan([PlanEntry(content="a step")]))
        error = await d.wait_for(SessionErrorFrame)
    (caps,) = d.of_type(SessionCapabilitiesFrame)
    assert not caps.payload.features.plans
    assert not caps.payload.features.plan_seeding
    assert error.payload.error_code == "UNSUPPORTED"
    assert not d.of_type(PlanUpdatedFrame)
