"""Bad turns of the openai-agents core, over HTTP to the scripted model: the SDK raising
mid-run, and an abort while two writes wait. Each turn ends once, every question it
asked is resolved, nothing of it comes after its end, and the session goes on (the bad
turns every core shares are in ``tests/sdk_cores/test_bad_turns.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rawp_adapters.frames import (
    AgentErrorFrame,
    InteractionRequestFrame,
    InteractionResolvedFrame,
    ToolInvokeResultFrame,
)
from rawp_adapters.testing import drive, never_answer
from tests.openai_agents.conftest import core
from tests.openai_agents.test_tools import TWO_WRITES, two_writes
from tests.support.core_scenarios import NO_GRACE, files, of_turn_after_its_end, turn_ends
from tests.support.llm_openai import DEFAULT_TEXT, ScriptedOpenAI

pytestmark = pytest.mark.anyio


async def test_the_sdk_raising_mid_run_ends_the_turn_in_error_after_the_calls_it_finished(
    llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("secret")
    # max_turns=1: the read runs, then the SDK raises MaxTurnsExceeded before its next call
    async with drive(core(llm, max_turns=1), workspace=tmp_path) as d:
        failed = await d.prompt('CALL_TOOL read_file {"path": "notes.txt"}')
        after = await d.prompt("hello")
    assert failed.stop_reason == "error"
    (error,) = failed.of_type(AgentErrorFrame)
    assert "Max turns (1) exceeded" in error.payload.message
    (result,) = failed.of_type(ToolInvokeResultFrame)
    assert result.payload.output == "secret"
    assert turn_ends(d.frames, failed.turn_id) == 1
    assert of_turn_after_its_end(d.frames, failed.turn_id) == []
    assert (after.stop_reason, after.text) == ("end_turn", DEFAULT_TEXT)


async def test_an_abort_while_two_writes_wait_resolves_both_and_nothing_of_the_turn_follows(
    tmp_path: Path,
) -> None:
    with ScriptedOpenAI(responder=two_writes) as llm:
        async with drive(core(llm), workspace=tmp_path, policy=never_answer, options=NO_GRACE) as d:
            start = await d.start_prompt(TWO_WRITES)
            asked = await d.wait_count(InteractionRequestFrame, 2)
            await d.send(d.control.abort(start.payload.turn_id))
            aborted = await d.wait_turn(start.payload.turn_id)
            after = await d.prompt("hello")
        assert llm.violations == []
    assert aborted.stop_reason == "cancelled"
    assert files(tmp_path) == []
    resolved = {
        f.payload.interaction_id: f.payload.outcome
        for f in aborted.of_type(InteractionResolvedFrame)
    }
    assert set(resolved) == {a.payload.interaction_id for a in asked}
    assert "allowed" not in resolved.values()
    assert [r.payload.is_error for r in aborted.of_type(ToolInvokeResultFrame)] == [True, True]
    assert turn_ends(d.frames, aborted.turn_id) == 1
    assert of_turn_after_its_end(d.frames, aborted.turn_id) == []
    assert (after.stop_reason, after.text) == ("end_turn", DEFAULT_TEXT)
