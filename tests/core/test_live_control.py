"""Steering, follow-up, model changes and plans in the runtime: each reaches the
adapter in order, is refused honestly where it cannot, and keeps the turn pairing."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest

from rawp_adapters import SessionContext, Turn, TurnResult
from rawp_adapters.frames import (
    AgentInfo,
    Features,
    ModelChangedFrame,
    ModelInfo,
    ModelListFrame,
    PlanEntry,
    PlanUpdatedFrame,
    PromptSteer,
    SessionErrorFrame,
    TextDelta,
    TurnEndFrame,
    TurnStartFrame,
)
from rawp_adapters.testing import FunctionAdapter, drive, say, stall

pytestmark = pytest.mark.anyio


async def test_a_steered_turn_takes_the_messages_in_order_and_keeps_one_start_and_end(
    tmp_path: Path,
) -> None:
    release = anyio.Event()

    async def waits(turn: Turn, ctx: SessionContext) -> TurnResult:
        await ctx.emit(TextDelta(turn_id=turn.turn_id, index=0, text="working"))
        await release.wait()
        return TurnResult()

    class Steered(FunctionAdapter):
        async def steer(self, turn: Turn, message: PromptSteer) -> None:
            await super().steer(turn, message)
            if len(self.steered) == 2:
                release.set()

    adapter = Steered(waits, steering=True)
    async with drive(adapter, workspace=tmp_path) as d:
        start = await d.start_prompt("go")
        await d.send(d.control.steer("also do B"))
        await d.send(d.control.follow_up("then C"))
        await d.wait_turn(start.payload.turn_id)
    assert [(m.delivery, m.text) for m in adapter.steered] == [
        ("steer", "also do B"),
        ("follow_up", "then C"),
    ]
    assert len(d.of_type(TurnStartFrame)) == len(d.of_type(TurnEndFrame)) == 1


async def test_a_steer_with_no_turn_running_is_refused(tmp_path: Path) -> None:
    adapter = FunctionAdapter(steering=True)
    async with drive(adapter, workspace=tmp_path) as d:
        await d.send(d.control.steer("hello?"))
        error = await d.wait_for(SessionErrorFrame)
    assert error.payload.error_code == "NO_ACTIVE_TURN"
    assert adapter.steered == []


async def test_a_prompt_during_a_turn_is_still_refused_with_prompt_in_progress(
    tmp_path: Path,
) -> None:
    adapter = FunctionAdapter(stall(), steering=True, abort="cancel")
    async with drive(adapter, workspace=tmp_path) as d:
        await d.start_prompt("go")
        await d.send(d.control.prompt("another"))
        error = await d.wait_for(SessionErrorFrame)
        await d.send(d.control.abort())
    assert error.payload.error_code == "PROMPT_IN_PROGRESS"


async def test_an_agent_that_cannot_be_steered_answers_unsupported(tmp_path: Path) -> None:
    async with drive(FunctionAdapter(stall(), abort="cancel"), workspace=tmp_path) as d:
        await d.start_prompt("go")
        await d.send(d.control.steer("x"))
        error = await d.wait_for(SessionErrorFrame)
        await d.send(d.control.abort())
    assert error.payload.error_code == "UNSUPPORTED"


async def test_a_model_change_is_confirmed_and_an_unknown_model_is_rejected(
    tmp_path: Path,
) -> None:
    adapter = FunctionAdapter(say("ok"), models=["fake/second"])
    async with drive(adapter, workspace=tmp_path) as d:
        await d.send(d.control.set_model("fake/second"))
        changed = await d.wait_for(ModelChangedFrame)
        await d.send(d.control.set_model("fake/none"))
        error = await d.wait_for(SessionErrorFrame)
        turn = await d.prompt("still here?")
    assert changed.payload.model == "fake/second"
    assert error.payload.error_code == "REJECTED"
    assert error.payload.fatal is False
    assert turn.stop_reason == "end_turn", "a rejected model leaves the session usable"


async def test_a_model_change_during_a_turn_waits_for_no_one_and_is_refused(
    tmp_path: Path,
) -> None:
    adapter = FunctionAdapter(stall(), models=["fake/second"], abort="cancel")
    async with drive(adapter, workspace=tmp_path) as d:
        await d.start_prompt("go")
        await d.send(d.control.set_model("fake/second"))
        error = await d.wait_for(SessionErrorFrame)
        await d.send(d.control.abort())
    assert error.payload.error_code == "PROMPT_IN_PROGRESS"
    assert not d.of_type(ModelChangedFrame)


async def test_a_seeded_plan_is_confirmed_as_the_agent_has_it(tmp_path: Path) -> None:
    class Planner(FunctionAdapter):
        async def set_plan(self, entries: Sequence[PlanEntry]) -> list[PlanEntry]:
            return [*entries, PlanEntry(content="report back")]

    adapter = Planner(features=Features(adapter_type="function", plan_seeding=True, plans=True))
    async with drive(adapter, workspace=tmp_path) as d:
        await d.send(d.control.set_plan([{"content": "read the code", "status": "pending"}]))
        plan = await d.wait_for(PlanUpdatedFrame)
    assert [e.content for e in plan.payload.entries] == ["read the code", "report back"]


async def test_unsupported_model_list_and_plan_are_answered_unsupported(tmp_path: Path) -> None:
    async with drive(FunctionAdapter(), workspace=tmp_path) as d:
        await d.send(d.control.list_models())
        await d.send(d.control.set_plan([{"content": "x"}]))
        await d.send(d.control.set_model(thinking_level="high"))
        errors = await d.wait_count(SessionErrorFrame, 3)
    assert [e.payload.error_code for e in errors] == ["UNSUPPORTED"] * 3


async def test_the_model_list_names_the_model_in_use_after_a_change(tmp_path: Path) -> None:
    class Lister(FunctionAdapter):
        async def list_models(self) -> list[ModelInfo]:
            return [ModelInfo(id="fake/first"), ModelInfo(id="fake/second")]

    adapter = Lister(
        say("ok"),
        models=["fake/second"],
        agent_info=AgentInfo(name="f", model="fake/first"),
        features=Features(adapter_type="function", model_change=True, model_list=True),
    )
    async with drive(adapter, workspace=tmp_path) as d:
        await d.send(d.control.list_models())
        await d.send(d.control.set_model("fake/second"))
        await d.send(d.control.list_models())
        first, second = await d.wait_count(ModelListFrame, 2)
    assert first.payload.current == "fake/first"
    assert second.payload.current == "fake/second"
