"""Bad turns of every SDK core, over HTTP to the scripted model: a stream cut mid-answer,
a model that stalls until an abort or the session's end, and one that floods the SDK
with deltas when the abort comes. Each turn ends once, nothing of it comes after its end, and the
session goes on."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from rawp_adapters.frames import AgentErrorFrame, TextDoneFrame, TurnEndFrame
from rawp_adapters.testing import drive
from tests.support.core_scenarios import NO_GRACE, ScriptedCore, of_turn_after_its_end, turn_ends
from tests.support.llm_openai import DEFAULT_TEXT, Part, Reply, ScriptedOpenAI, last_user_text

pytestmark = pytest.mark.anyio

CUT_MID_ANSWER = "CUT_MID_ANSWER"
HALF_ANSWER = ("Half ", "an ")
STALLS = "SLOW_STREAM 3 60000"  # one delta, then a minute of nothing
FLOODS = "SLOW_STREAM 20000 0"  # deltas as fast as the server writes them
ENDS_WITHIN_S = 40.0
"""How long a test waits for the core to end a turn: under :data:`NO_GRACE`'s minute, so
the core, not the session's grace, ends it; long enough for a loaded host, where the
Copilot CLI's flood of deltas queued before the abort (10,084 in 10 s once, 4 workers on
2 cores) is read first."""
WAIT_S = 60.0


def cut_mid_answer(body: dict[str, Any]) -> Reply | None:
    """``CUT_MID_ANSWER``: two text deltas, then the connection dropped."""
    if CUT_MID_ANSWER not in last_user_text(body):
        return None
    return Reply(parts=(Part(kind="text", chunks=HALF_ANSWER),), cut=True)


async def test_a_stream_cut_mid_answer_ends_the_turn_in_error_and_the_session_goes_on(
    scripted_core: ScriptedCore, tmp_path: Path
) -> None:
    with ScriptedOpenAI(responder=cut_mid_answer) as llm:
        adapter = scripted_core.adapter(llm)
        async with drive(adapter, workspace=tmp_path, timeout=WAIT_S) as d:
            failed = await d.prompt(CUT_MID_ANSWER)
            after = await d.prompt("Say hello.")
        assert llm.violations == []
    # the Copilot CLI retries the cut call itself: each try's text is a block of its own
    assert failed.text.startswith("".join(HALF_ANSWER))
    assert "".join(done.payload.text for done in failed.of_type(TextDoneFrame)) == failed.text
    assert failed.stop_reason == "error"
    assert len(failed.of_type(AgentErrorFrame)) == 1
    assert turn_ends(d.frames, failed.turn_id) == 1
    assert of_turn_after_its_end(d.frames, failed.turn_id) == []
    assert (after.stop_reason, after.text) == ("end_turn", DEFAULT_TEXT)


@pytest.mark.parametrize("streaming", [STALLS, FLOODS], ids=["stalling", "flooding"])
async def test_an_abort_ends_a_streaming_turn_at_once_and_nothing_of_it_follows(
    scripted_core: ScriptedCore, llm: ScriptedOpenAI, tmp_path: Path, streaming: str
) -> None:
    adapter = scripted_core.adapter(llm)
    async with drive(adapter, workspace=tmp_path, options=NO_GRACE, timeout=WAIT_S) as d:
        start = await d.start_prompt(streaming)
        await d.wait_for("agent.text.delta")
        await d.send(d.control.abort(start.payload.turn_id))
        aborted = await d.wait_turn(start.payload.turn_id, timeout=ENDS_WITHIN_S)
        after = await d.prompt("Say hello.")
    assert aborted.stop_reason == "cancelled"
    assert aborted.text.startswith("tick 0 ")
    assert turn_ends(d.frames, aborted.turn_id) == 1
    assert of_turn_after_its_end(d.frames, aborted.turn_id) == []
    assert (after.stop_reason, after.text) == ("end_turn", DEFAULT_TEXT)


def sdk_threads() -> set[threading.Thread]:
    """The threads the cores run their SDKs in (``rawp-…``)."""
    return {t for t in threading.enumerate() if t.name.startswith("rawp-")}


async def test_the_session_ending_while_the_model_stalls_ends_the_turn_and_the_sdks_thread(
    scripted_core: ScriptedCore, llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    before = sdk_threads()
    adapter = scripted_core.adapter(llm)
    async with drive(adapter, workspace=tmp_path, options=NO_GRACE, timeout=ENDS_WITHIN_S) as d:
        start = await d.start_prompt(STALLS)
        await d.wait_for("agent.text.delta")
    assert turn_ends(d.frames, start.payload.turn_id) == 1
    (end,) = d.of_type(TurnEndFrame)
    assert end.payload.stop_reason == "cancelled"
    assert d.frames[-1].type == "session.closed"
    assert sdk_threads() - before == set()
