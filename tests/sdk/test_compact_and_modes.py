"""Compaction and plan mode through the SDK adapter, with a scripted core: the adapter
reports what the core can do and passes the Master's requests on."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from rawp_adapter_sdk import Compaction, CoreError, FunctionCore, SdkAdapter

from rawp_adapters.frames import (
    AgentErrorFrame,
    Mode,
    SessionCapabilitiesFrame,
    SessionClosedFrame,
    SessionCompactedFrame,
    SessionErrorFrame,
)
from rawp_adapters.testing import drive
from tests.sdk.waits import idle_after

pytestmark = pytest.mark.anyio


class CompactingPlanningCore(FunctionCore):
    """A function core that can also compact (answering ``compaction``, or raising
    ``compact_error``) and switch modes (each mode it switched to can be received from
    ``modes``)."""

    def __init__(
        self,
        *,
        compaction: Compaction | None = None,
        compact_error: CoreError | None = None,
        mode_error: CoreError | None = None,
    ) -> None:
        super().__init__()
        self.compaction = compaction or Compaction()
        self.compact_error = compact_error
        self.mode_error = mode_error
        self.instructions: list[str | None] = []
        self._switched, self.modes = anyio.create_memory_object_stream[Mode](16)

    async def compact(self, instructions: str | None) -> Compaction:
        self.instructions.append(instructions)
        if self.compact_error is not None:
            raise self.compact_error
        return self.compaction

    async def switch_mode(self, mode: Mode) -> None:
        if self.mode_error is not None:
            raise self.mode_error
        await self._switched.send(mode)


async def test_a_core_that_compacts_and_plans_is_reported_with_both_features(
    tmp_path: Path,
) -> None:
    async with drive(SdkAdapter.for_core(CompactingPlanningCore()), workspace=tmp_path) as d:
        caps = await d.wait_for(SessionCapabilitiesFrame)
    assert caps.payload.features.context_compaction
    assert caps.payload.features.plan_mode


async def test_compaction_reports_what_the_core_did_as_session_compacted(tmp_path: Path) -> None:
    core = CompactingPlanningCore(compaction=Compaction(tokens_before=42, summary="we said hi"))
    async with drive(SdkAdapter.for_core(core), workspace=tmp_path) as d:
        await d.prompt("hi")
        await d.send(d.control.compact("keep the names"))
        compacted = await d.wait_for(SessionCompactedFrame)
        await idle_after(d, compacted)
        turn = await d.prompt("and now?")
    assert compacted.payload.trigger == "manual"
    assert (compacted.payload.tokens_before, compacted.payload.summary) == (42, "we said hi")
    assert core.instructions == ["keep the names"]
    assert turn.text == "Hello"


async def test_compaction_without_instructions_passes_none(tmp_path: Path) -> None:
    core = CompactingPlanningCore()
    async with drive(SdkAdapter.for_core(core), workspace=tmp_path) as d:
        await d.send(d.control.compact(""))
        compacted = await d.wait_for(SessionCompactedFrame)
    assert (compacted.payload.tokens_before, compacted.payload.summary) == (None, None)
    assert core.instructions == [None]


async def test_a_failed_compaction_is_an_agent_error_and_the_session_goes_on(
    tmp_path: Path,
) -> None:
    core = CompactingPlanningCore(compact_error=CoreError("nothing to compact"))
    async with drive(SdkAdapter.for_core(core), workspace=tmp_path) as d:
        await d.send(d.control.compact())
        error = await d.wait_for(AgentErrorFrame)
        await idle_after(d, error)
        turn = await d.prompt("hi")
    assert (error.payload.severity, error.payload.message) == ("error", "nothing to compact")
    assert d.of_type(SessionCompactedFrame) == []
    assert turn.text == "Hello"


async def test_a_fatal_compaction_failure_closes_the_session(tmp_path: Path) -> None:
    core = CompactingPlanningCore(compact_error=CoreError("the agent is gone", fatal=True))
    async with drive(SdkAdapter.for_core(core), workspace=tmp_path) as d:
        await d.send(d.control.compact())
        closed = await d.wait_for(SessionClosedFrame)
    (error,) = d.of_type(AgentErrorFrame)
    assert error.payload.severity == "fatal"
    assert closed.payload.reason == "agent_exit"
    assert core.closed


async def test_mode_switches_reach_the_core_in_order(tmp_path: Path) -> None:
    core = CompactingPlanningCore()
    async with drive(SdkAdapter.for_core(core), workspace=tmp_path) as d:
        with anyio.fail_after(10):
            await d.send(d.control.switch_mode("plan"))
            assert await core.modes.receive() == "plan"
            await d.send(d.control.switch_mode("default"))
            assert await core.modes.receive() == "default"
    assert d.of_type(SessionErrorFrame) == []


async def test_a_mode_switch_the_core_refuses_is_an_agent_error(tmp_path: Path) -> None:
    core = CompactingPlanningCore(mode_error=CoreError("no plan mode today"))
    async with drive(SdkAdapter.for_core(core), workspace=tmp_path) as d:
        await d.send(d.control.switch_mode("plan"))
        error = await d.wait_for(AgentErrorFrame)
        turn = await d.prompt("hi")
    assert error.payload.message == "no plan mode today"
    assert turn.text == "Hello"


async def test_a_core_without_compaction_or_plan_mode_gets_unsupported_answers(
    tmp_path: Path,
) -> None:
    adapter = SdkAdapter.from_settings({"core": "demo", "core_options": {"delay_ms": 0}})
    async with drive(adapter, workspace=tmp_path) as d:
        caps = await d.wait_for(SessionCapabilitiesFrame)
        await d.send(d.control.compact())
        await d.send(d.control.switch_mode("plan"))
        errors = await d.wait_count(SessionErrorFrame, 2)
    assert not caps.payload.features.context_compaction
    assert not caps.payload.features.plan_mode
    assert [e.payload.error_code for e in errors] == ["UNSUPPORTED", "UNSUPPORTED"]
