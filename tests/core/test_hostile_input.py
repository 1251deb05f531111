"""No line from a Master and no string from an agent can end a session; every bad
input is answered, and nothing the runtime remembers grows without bound."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from rawp_adapters import (
    FrameError,
    Question,
    SessionContext,
    SessionOptions,
    Turn,
    TurnResult,
    decode_frame,
    encode_frame,
    open_session,
)
from rawp_adapters._codec import MAX_NESTING
from rawp_adapters.frames import (
    AgentErrorFrame,
    SessionErrorFrame,
    TextDelta,
    TextDeltaFrame,
)
from rawp_adapters.testing import FunctionAdapter as ScriptedAdapter
from rawp_adapters.testing import assert_valid_stream, drive, never_answer

pytestmark = pytest.mark.anyio


def prompt_line(session_id: str, text: str, **envelope: Any) -> str:
    frame = {
        "type": "control.prompt.request",
        "session_id": session_id,
        "seq": 1,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "payload": {"prompt_id": "p1", "input_type": "text", "text": text},
        **envelope,
    }
    return json.dumps(frame)


# ------------------------------------------------------------------ codec


def test_json_nested_far_too_deep_is_a_frame_error_not_a_recursion_error() -> None:
    with pytest.raises(FrameError, match="nested deeper"):
        decode_frame("[" * 100_000)
    with pytest.raises(FrameError, match="nested deeper"):
        decode_frame('{"type": "x", "payload": ' + '{"a": ' * 100_000 + "1" + "}" * 100_001)


def test_nesting_just_past_the_limit_is_refused_and_at_the_limit_is_read() -> None:
    def nested(depth: int) -> str:
        # the frame object is level 1, payload level 2, then lists down to ``depth``
        inner = "[" * (depth - 2) + "]" * (depth - 2)
        frame = {"type": "control.future", "session_id": "s", "seq": 1, "timestamp": "t"}
        return json.dumps({**frame, "payload": {"x": None}}).replace("null", inner)

    assert decode_frame(nested(MAX_NESTING)).type == "control.future"
    with pytest.raises(FrameError, match=f"deeper than {MAX_NESTING}"):
        decode_frame(nested(MAX_NESTING + 1))


@pytest.mark.parametrize(
    "where",
    ["session_id", "type", "prompt text", "a key", "raw UTF-8 bytes"],
)
def test_a_lone_surrogate_anywhere_in_a_control_frame_is_a_frame_error(where: str) -> None:
    line = prompt_line("s1", "hello")
    if where == "session_id":
        line = line.replace('"s1"', '"s\\udc00"')
    elif where == "type":
        line = line.replace("control.prompt.request", "control.\\ud800x")
    elif where == "prompt text":
        line = line.replace('"hello"', '"hel\\udc00lo"')
    elif where == "a key":
        line = line.replace('"prompt_id"', '"\\udfff": 1, "prompt_id"')
    raw = line.encode()
    if where == "raw UTF-8 bytes":
        raw = raw.replace(b"hello", b"hel\xed\xb0\x80lo")  # U+DC00 encoded raw
    with pytest.raises(FrameError, match="lone UTF-16 surrogate"):
        decode_frame(raw)


def test_a_surrogate_pair_written_as_escapes_is_one_character_and_fine() -> None:
    frame = decode_frame(prompt_line("s1", "smile \\ud83d\\ude00").replace("\\\\", "\\"))
    assert frame.payload.text == "smile \U0001f600"  # type: ignore[union-attr]


def test_a_frame_of_another_major_version_is_refused_with_its_own_code() -> None:
    with pytest.raises(FrameError, match=r"unsupported version 'rawp-dps-9\.9'") as caught:
        decode_frame(prompt_line("s1", "hi", version="rawp-dps-9.9"))
    assert caught.value.code == "UNSUPPORTED_VERSION"
    for bad in ("2.0", "rawp-dps-1", "", 1):
        with pytest.raises(FrameError, match="unsupported version"):
            decode_frame(prompt_line("s1", "hi", version=bad))


def test_a_later_minor_version_and_a_missing_version_are_read() -> None:
    assert decode_frame(prompt_line("s1", "hi", version="rawp-dps-1.7")).type == (
        "control.prompt.request"
    )
    assert decode_frame(prompt_line("s1", "hi")).type == "control.prompt.request"


def test_agent_text_with_a_lone_surrogate_is_written_with_a_replacement_character() -> None:
    frame = TextDeltaFrame(
        session_id="s",
        seq=7,
        timestamp="2026-01-01T00:00:00.000Z",
        payload=TextDelta(turn_id="t", index=0, text="a\udc00b \U0001f600 \u2028"),
    )
    line = encode_frame(frame)
    assert line.count(b"\n") == 1
    decoded = decode_frame(line)
    assert isinstance(decoded, TextDeltaFrame)
    assert decoded.seq == 7
    assert decoded.payload.text == "a\ufffdb \U0001f600 \u2028"


# ------------------------------------------------------------------ session


async def echo_prompt(turn: Turn, ctx: SessionContext) -> TurnResult:
    await ctx.emit(TextDelta(turn_id=turn.turn_id, index=0, text=turn.request.text))
    return TurnResult()


async def test_hostile_lines_are_answered_and_the_session_goes_on(tmp_path: Path) -> None:
    adapter = ScriptedAdapter(echo_prompt)
    async with drive(adapter, workspace=tmp_path) as d:
        sid = d.session.session_id
        hostile = [
            "[" * 100_000,
            prompt_line(sid, "x").replace(f'"{sid}"', '"\\udc00"'),
            prompt_line(sid, "x").replace("control.prompt.request", "control.\\udc00"),
            prompt_line(sid, "x").replace('"x"', '"caf\\udc00"'),
            prompt_line(sid, "hi", version="rawp-dps-9.9"),
        ]
        for line in hostile:
            await d.session.send_line(line)
        errors = await d.wait_count(SessionErrorFrame, len(hostile))
        codes = [e.payload.error_code for e in errors]
        assert codes == ["INVALID_FRAME"] * 4 + ["UNSUPPORTED_VERSION"]
        assert not adapter.prompts, "no hostile prompt reached the agent"
        turn = await d.prompt("still here")
        assert turn.text == "still here"
        await d.end()
    for frame in d.frames:
        encode_frame(frame)  # every frame the session made can be written
    d.assert_valid()


async def test_a_typed_frame_of_another_version_is_refused(tmp_path: Path) -> None:
    adapter = ScriptedAdapter(echo_prompt)
    async with drive(adapter, workspace=tmp_path) as d:
        frame = d.control.prompt("hi").model_copy(update={"version": "rawp-dps-2.0"})
        await d.send(frame)
        error = await d.wait_for(SessionErrorFrame)
        assert error.payload.error_code == "UNSUPPORTED_VERSION"
        assert not adapter.prompts


async def ask_permission(turn: Turn, ctx: SessionContext) -> TurnResult:
    outcome = await ctx.interact(Question.permission("bash", turn_id=turn.turn_id))
    await ctx.emit(TextDelta(turn_id=turn.turn_id, index=0, text=outcome.reason))
    return TurnResult()


async def test_a_permission_answer_without_a_decision_is_denied_and_reported(
    tmp_path: Path,
) -> None:
    async with drive(ScriptedAdapter(ask_permission), workspace=tmp_path, policy=never_answer) as d:
        start = await d.start_prompt("go")
        request = await d.wait_for("agent.interaction.request")
        interaction_id = request.payload.interaction_id
        line = json.dumps(
            {
                "type": "control.interaction.response",
                "session_id": d.session.session_id,
                "seq": 2,
                "timestamp": "2026-01-01T00:00:00.000Z",
                "payload": {"interaction_id": interaction_id},
            }
        )
        await d.session.send_line(line)
        error = await d.wait_for(SessionErrorFrame)
        assert error.payload.error_code == "INVALID_FRAME"
        assert interaction_id in error.payload.message
        assert "malformed" in error.payload.message
        assert "denied" in error.payload.message
        turn = await d.wait_turn(start.payload.turn_id)
        assert turn.text == "malformed"


async def test_bad_lines_from_a_master_that_never_reads_stay_bounded(tmp_path: Path) -> None:
    options = SessionOptions(frame_buffer=16)
    async with open_session(ScriptedAdapter(), workspace=tmp_path, options=options) as session:
        for n in range(2_000):
            await session.send_line(f"not json {n}")
        queued = len(session._queue)
        assert queued <= options.frame_buffer + 2
        await session.close()
        frames = [frame async for frame in session]
    summary = [f for f in frames if isinstance(f, SessionErrorFrame)][-1]
    assert "were refused without an answer" in summary.payload.message
    assert frames[-1].type == "session.closed"
    assert_valid_stream(frames)


async def test_frames_before_ready_are_bounded_and_their_loss_reported(tmp_path: Path) -> None:
    class Chatty(ScriptedAdapter):
        async def start(self, ctx: SessionContext) -> None:
            await super().start(ctx)
            for n in range(5_000):
                await ctx.emit(TextDelta(turn_id="early", index=0, text=f"{n}"))

    options = SessionOptions(frame_buffer=32)
    async with open_session(Chatty(), workspace=tmp_path, options=options) as session:
        await session.close()
        frames = [frame async for frame in session]
    assert len(frames) < 2 * options.frame_buffer
    warnings = [f for f in frames if isinstance(f, AgentErrorFrame)]
    assert warnings[0].payload.severity == "warning"
    assert "before it was ready were dropped" in warnings[0].payload.message


async def test_distinct_unknown_frame_types_are_not_all_remembered(tmp_path: Path) -> None:
    async with open_session(ScriptedAdapter(), workspace=tmp_path) as session:
        for n in range(5_000):
            line = json.dumps(
                {
                    "type": f"control.x{n}" + "y" * 1000,
                    "session_id": session.session_id,
                    "seq": n + 1,
                    "timestamp": "2026-01-01T00:00:00.000Z",
                }
            )
            await session.send_line(line)
        assert len(session._protocol._unknown_types) <= 65
        assert all(len(name) <= 200 for name in session._protocol._unknown_types)


async def test_an_agent_that_opens_too_many_questions_is_denied_at_once(tmp_path: Path) -> None:
    reasons: list[str] = []

    async def flood_questions(turn: Turn, ctx: SessionContext) -> TurnResult:
        async def ask() -> None:
            outcome = await ctx.interact(Question("CONFIRM", turn_id=turn.turn_id))
            reasons.append(outcome.reason)

        async with anyio.create_task_group() as tg:
            for _ in range(40):
                tg.start_soon(ask)
        return TurnResult()

    options = SessionOptions(max_open_interactions=8, interaction_timeout_ms=200)
    adapter = ScriptedAdapter(flood_questions)
    async with drive(adapter, workspace=tmp_path, policy=never_answer, options=options) as d:
        turn = await d.prompt("go")
    requests = turn.of_type("agent.interaction.request")
    assert len(requests) == 8
    assert reasons.count("overloaded") == 32
    assert reasons.count("timeout") == 8
