"""Bad turns of the openai-agents core, over HTTP to the scripted model: the SDK raising
mid-run, a stream cut mid-answer, a model that stalls until an abort or the session's
end, and events the SDK still makes after a turn was cancelled. Each turn ends once,
every question it asked is resolved, nothing of it comes after its end, and the session
goes on."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from rawp_adapters import SessionOptions
from rawp_adapters.frames import (
    AgentErrorFrame,
    ClientFrame,
    InteractionRequestFrame,
    InteractionResolvedFrame,
    TextDoneFrame,
    ToolInvokeResultFrame,
    TurnEndFrame,
)
from rawp_adapters.testing import drive, never_answer
from tests.openai_agents.conftest import core
from tests.openai_agents.test_tools import TWO_WRITES, files, two_writes
from tests.support.llm_openai import (
    DEFAULT_TEXT,
    Part,
    Reply,
    ScriptedOpenAI,
    last_user_text,
)

pytestmark = pytest.mark.anyio

CUT_MID_ANSWER = "CUT_MID_ANSWER"
HALF_ANSWER = ("Half ", "an ")
STALLS = "SLOW_STREAM 3 60000"  # one delta, then a minute of nothing
NO_GRACE = SessionOptions(abort_grace=60.0)
"""The session would end an aborted turn itself only after a minute: a turn that ends
within a test's wait was ended by the core."""
ISLAND = "rawp-openai-agents-"


def cut_mid_answer(body: dict[str, Any]) -> Reply | None:
    """``CUT_MID_ANSWER``: two text deltas, then the connection dropped."""
    if CUT_MID_ANSWER not in last_user_text(body):
        return None
    return Reply(parts=(Part(kind="text", chunks=HALF_ANSWER),), cut=True)


def of_turn_after_its_end(frames: list[ClientFrame], turn_id: str) -> list[str]:
    """The types of the frames of ``turn_id`` that came after its (first) end."""
    end = next(
        i
        for i, f in enumerate(frames)
        if isinstance(f, TurnEndFrame) and f.payload.turn_id == turn_id
    )
    return [f.type for f in frames[end + 1 :] if getattr(f.payload, "turn_id", None) == turn_id]


def turn_ends(frames: list[ClientFrame], turn_id: str) -> int:
    return sum(isinstance(f, TurnEndFrame) and f.payload.turn_id == turn_id for f in frames)


def islands() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith(ISLAND)}


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


async def test_a_stream_cut_mid_answer_ends_its_text_then_the_turn_in_error(
    tmp_path: Path,
) -> None:
    with ScriptedOpenAI(responder=cut_mid_answer) as llm:
        async with drive(core(llm), workspace=tmp_path) as d:
            failed = await d.prompt(CUT_MID_ANSWER)
            after = await d.prompt("hello")
        assert llm.violations == []
    assert failed.text == "".join(HALF_ANSWER)
    (done,) = failed.of_type(TextDoneFrame)
    assert done.payload.text == "".join(HALF_ANSWER)
    assert failed.stop_reason == "error"
    assert len(failed.of_type(AgentErrorFrame)) == 1
    assert of_turn_after_its_end(d.frames, failed.turn_id) == []
    assert (after.stop_reason, after.text) == ("end_turn", DEFAULT_TEXT)


async def test_an_abort_cuts_off_a_model_that_stalls_mid_answer_long_before_the_grace(
    llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    async with drive(core(llm), workspace=tmp_path, options=NO_GRACE) as d:
        start = await d.start_prompt(STALLS)
        await d.wait_for("agent.text.delta")
        await d.send(d.control.abort(start.payload.turn_id))
        stalled = await d.wait_turn(start.payload.turn_id, timeout=10)
        after = await d.prompt("hello")
    assert stalled.stop_reason == "cancelled"
    assert stalled.text == "tick 0 "
    assert turn_ends(d.frames, stalled.turn_id) == 1
    assert of_turn_after_its_end(d.frames, stalled.turn_id) == []
    assert (after.stop_reason, after.text) == ("end_turn", DEFAULT_TEXT)


async def test_the_session_ending_while_the_model_stalls_ends_the_turn_and_the_sdks_loop(
    llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    before = islands()
    async with drive(core(llm), workspace=tmp_path, options=NO_GRACE, timeout=10) as d:
        start = await d.start_prompt(STALLS)
        await d.wait_for("agent.text.delta")
    assert turn_ends(d.frames, start.payload.turn_id) == 1
    (end,) = d.of_type(TurnEndFrame)
    assert end.payload.stop_reason == "cancelled"
    assert islands() - before == set()


async def test_an_abort_while_two_writes_wait_resolves_both_and_nothing_of_the_turn_follows(
    tmp_path: Path,
) -> None:
    with ScriptedOpenAI(responder=two_writes) as llm:
        async with drive(core(llm), workspace=tmp_path, policy=never_answer) as d:
            start = await d.start_prompt(TWO_WRITES)
            asked = await d.wait_count(InteractionRequestFrame, 2)
            await d.send(d.control.abort(start.payload.turn_id))
            aborted = await d.wait_turn(start.payload.turn_id, timeout=10)
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


async def test_what_the_sdk_streams_after_an_abort_never_reaches_the_session(
    llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    async with drive(core(llm), workspace=tmp_path, options=NO_GRACE) as d:
        start = await d.start_prompt("SLOW_STREAM 20000 0")
        await d.wait_for("agent.text.delta")
        await d.send(d.control.abort(start.payload.turn_id))
        aborted = await d.wait_turn(start.payload.turn_id, timeout=10)
        after = await d.prompt("hello")
    assert aborted.stop_reason == "cancelled"
    assert turn_ends(d.frames, aborted.turn_id) == 1
    assert of_turn_after_its_end(d.frames, aborted.turn_id) == []
    assert "tick" not in after.text
    assert (after.stop_reason, after.text) == ("end_turn", DEFAULT_TEXT)
