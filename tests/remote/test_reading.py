"""A Master's reading of a message of frames (``rawp_adapters.remote._reading``): the
streamed text and thinking take a fast path, and every line still reads as the stdio
codec reads it, frame for frame and error for error."""

from __future__ import annotations

import json
from typing import Any

import pytest

from rawp_adapters import FrameError, decode_frame, encode_frame
from rawp_adapters.frames import (
    TextDelta,
    TextDeltaFrame,
    TextDone,
    TextDoneFrame,
    ThinkingDelta,
    ThinkingDeltaFrame,
    TurnStart,
    TurnStartFrame,
)
from rawp_adapters.remote import _reading
from rawp_adapters.remote._reading import read_frames

SID = "3f0c2d7e-1111-2222-3333-444455556666"
WHEN = "2026-11-25T04:33:00.123Z"
TURN = "turn-1"


def _line(seq: int, /, **changes: Any) -> bytes:
    """A text delta's line with ``changes`` to its JSON (``payload`` merged)."""
    frame = TextDeltaFrame(
        session_id=SID, seq=seq, timestamp=WHEN, payload=TextDelta(turn_id=TURN, index=0, text="hi")
    )
    data = json.loads(encode_frame(frame))
    data["payload"].update(changes.pop("payload", {}))
    data.update(changes)
    return json.dumps(data).encode()


def _message(*lines: bytes) -> bytes:
    return b"".join(line.rstrip(b"\n") + b"\n" for line in lines)


def _as_stdio(line: bytes) -> Any:
    try:
        return decode_frame(line)
    except FrameError as exc:
        return str(exc)


def _read_one(line: bytes) -> Any:
    frames, errors = read_frames(line + b"\n")
    assert len(frames) + len(errors) == 1
    return frames[0] if frames else str(errors[0])


def _same(read: Any, expected: Any) -> None:
    assert read == expected
    if not isinstance(expected, str):
        assert read.model_fields_set == expected.model_fields_set
        assert read.payload.model_fields_set == expected.payload.model_fields_set


def test_a_message_of_streamed_and_other_frames_reads_as_stdio_reads_each_line() -> None:
    frames = [
        TurnStartFrame(session_id=SID, seq=1, timestamp=WHEN, payload=TurnStart(turn_id=TURN)),
        TextDeltaFrame(
            session_id=SID,
            seq=2,
            timestamp=WHEN,
            payload=TextDelta(turn_id=TURN, index=0, text="a"),
        ),
        ThinkingDeltaFrame(
            session_id=SID,
            seq=3,
            timestamp=WHEN,
            payload=ThinkingDelta(turn_id=TURN, index=1, text="hm", redacted=True),
        ),
        TextDoneFrame(
            session_id=SID,
            seq=4,
            timestamp=WHEN,
            payload=TextDone(turn_id=TURN, index=0, text="a\u2028b \U0001f600"),
        ),
    ]
    lines = [encode_frame(frame) for frame in frames]
    unknown = _line(5, type="agent.new.kind")
    thinking_default = _line(6, type="agent.thinking.delta")  # no "redacted": its default
    read, errors = read_frames(_message(*lines, unknown, thinking_default))
    assert errors == []
    expected = [decode_frame(line) for line in (*lines, unknown, thinking_default)]
    assert read == expected
    for got, want in zip(read, expected, strict=True):
        assert type(got) is type(want)
        assert got.model_fields_set == want.model_fields_set
    assert isinstance(read[-1], ThinkingDeltaFrame)
    assert read[-1].payload.model_fields_set == {"turn_id", "index", "text"}


@pytest.mark.parametrize(
    "line",
    [
        _line(7, seq=0),
        _line(7, seq="7"),  # a number as text: pydantic reads it
        _line(7, version="rawp-dps-1.3"),  # a later minor version is read
        _line(7, version="rawp-dps-2.0"),
        _line(7, payload={"text": "\ud800"}),  # a lone surrogate
        _line(7, payload={"text": 5}),
        _line(7, payload={"index": True}),
        _line(7, payload={"extra": "ignored"}),
        _line(7, payload={"extra": json.loads("[" * 70 + "]" * 70)}),  # nested too deep
        _line(7, metadata={"trace": {"traceparent": "00-" + "1" * 32 + "-" + "2" * 16 + "-01"}}),
        _line(7, session_id=None),
        json.dumps({"type": "agent.text.delta", "seq": 1}).encode(),
        b"not json",
        b"[1, 2]",
    ],
)
def test_a_line_off_the_fast_path_reads_as_on_stdio_and_loses_only_itself(line: bytes) -> None:
    _same(_read_one(line), _as_stdio(line))
    frames, errors = read_frames(_message(_line(1), line, _line(9)))
    assert [frame.seq for frame in frames[:1] + frames[-1:]] == [1, 9]
    assert len(frames) + len(errors) == 3


def test_streamed_text_is_read_without_the_stdio_decoder(monkeypatch: pytest.MonkeyPatch) -> None:
    slow: list[bytes] = []

    def counted(line: bytes) -> Any:
        slow.append(line)
        return decode_frame(line)

    monkeypatch.setattr(_reading, "decode_frame", counted)
    frames, _ = read_frames(_message(*(_line(seq) for seq in range(1, 101))))
    assert [frame.seq for frame in frames] == list(range(1, 101))
    assert slow == []
