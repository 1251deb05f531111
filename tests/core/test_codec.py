from __future__ import annotations

import json

import pytest

from rawp_adapters import FrameError, decode_frame, encode_frame
from rawp_adapters._codec import FRAME_CLASS_BY_TYPE, encode_frames, utc_timestamp
from rawp_adapters.frames import TextDeltaFrame, UnknownFrame
from tests.core.samples import SAMPLE_PAYLOADS, TRICKY, sample_frame


def test_every_frame_type_has_a_sample() -> None:
    assert set(SAMPLE_PAYLOADS) == set(FRAME_CLASS_BY_TYPE)


@pytest.mark.parametrize("frame_type", sorted(SAMPLE_PAYLOADS))
def test_every_frame_type_survives_a_round_trip(frame_type: str) -> None:
    frame = decode_frame(json.dumps(sample_frame(frame_type)))
    assert type(frame) is FRAME_CLASS_BY_TYPE[frame_type]
    line = encode_frame(frame)
    assert line.endswith(b"\n")
    assert line.count(b"\n") == 1, "a frame is exactly one line"
    assert decode_frame(line) == frame


def test_the_stream_encoder_writes_every_frame_as_encode_frame_does_across_sessions() -> None:
    frames = []
    for seq, frame_type in enumerate(sorted(SAMPLE_PAYLOADS), start=1):
        for session_id in ("session-a", "session-b"):
            fields = sample_frame(frame_type, seq) | {"session_id": session_id}
            for metadata in (fields["metadata"], None):
                frames.append(decode_frame(json.dumps(fields | {"metadata": metadata})))
    encoded = encode_frames(frames)
    assert encoded == b"".join(encode_frame(frame) for frame in frames)


def test_the_stream_encoder_writes_a_batch_with_odd_frames_as_encode_frame_does() -> None:
    """An unknown frame, text UTF-8 cannot carry, and raw line separators in one batch."""
    delta = decode_frame(json.dumps(sample_frame("agent.text.delta")))
    unknown = decode_frame(json.dumps(sample_frame("agent.text.delta") | {"type": "x.y"}))
    lone = TextDeltaFrame.model_validate(
        sample_frame("agent.text.delta")
        | {"payload": {"turn_id": "t", "index": 0, "text": "\ud800"}}
    )
    for batch in ([delta, unknown, delta], [delta, lone, delta], [delta, delta]):
        assert encode_frames(batch) == b"".join(map(encode_frame, batch))


def test_unicode_line_separators_are_escaped_on_the_wire_and_restored() -> None:
    frame = decode_frame(json.dumps(sample_frame("agent.text.delta")))
    line = encode_frame(frame)
    assert "\u2028".encode() not in line
    assert "\u2029".encode() not in line
    assert len(line.decode().splitlines()) == 1, "even a splitlines() reader sees one line"
    decoded = decode_frame(line)
    assert isinstance(decoded, TextDeltaFrame)
    assert decoded.payload.text == TRICKY


def test_non_ascii_is_written_as_utf8_not_escaped() -> None:
    line = encode_frame(decode_frame(json.dumps(sample_frame("agent.text.done"))))
    assert "漢字 🙂".encode() in line


def test_raw_unicode_separators_inside_strings_decode_and_crlf_is_accepted() -> None:
    raw = json.dumps(sample_frame("agent.text.delta"), ensure_ascii=False).encode() + b"\r\n"
    assert "\u2028".encode() in raw
    decoded = decode_frame(raw)
    assert isinstance(decoded, TextDeltaFrame)
    assert decoded.payload.text == TRICKY


def test_absent_optional_fields_are_left_out_of_the_line() -> None:
    data = sample_frame("session.turn.start")
    del data["metadata"]
    data["payload"] = {"turn_id": "t1"}
    line = json.loads(encode_frame(decode_frame(json.dumps(data))))
    assert line["payload"] == {"turn_id": "t1"}
    assert "metadata" not in line


def test_none_values_inside_tool_input_are_kept() -> None:
    line = json.loads(encode_frame(decode_frame(json.dumps(sample_frame("tool.invoke.request")))))
    assert line["payload"]["input"]["nested"]["none"] is None


def test_unknown_fields_are_ignored() -> None:
    data = sample_frame("agent.text.delta")
    data["future_envelope_field"] = 1
    data["payload"] = {**data["payload"], "future_payload_field": "x"}
    frame = decode_frame(json.dumps(data))
    assert isinstance(frame, TextDeltaFrame)
    assert "future" not in encode_frame(frame).decode()


def test_an_unknown_type_is_passed_through_not_rejected() -> None:
    data = sample_frame("agent.text.delta")
    data["type"] = "agent.file.transfer"
    data["payload"] = {"anything": [1, 2]}
    frame = decode_frame(json.dumps(data))
    assert isinstance(frame, UnknownFrame)
    assert frame.type == "agent.file.transfer"
    assert frame.payload == {"anything": [1, 2]}


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        (b"not json", "not JSON"),
        (b"\xff\xfe{}", "not JSON"),
        (b"[1, 2]", "JSON object"),
        (b'{"payload": {}}', "string 'type'"),
        (b'{"type": 7}', "string 'type'"),
    ],
)
def test_a_line_that_is_not_a_frame_raises_a_clear_frame_error(line: bytes, problem: str) -> None:
    with pytest.raises(FrameError, match=problem):
        decode_frame(line)


def test_a_known_type_with_an_invalid_payload_names_the_type_and_the_field() -> None:
    data = sample_frame("control.interaction.response")
    data["payload"] = {"interaction_id": "i1", "decision": "maybe"}
    with pytest.raises(FrameError, match=r"control\.interaction\.response.*decision") as info:
        decode_frame(json.dumps(data))
    assert info.value.frame_type == "control.interaction.response"
    assert info.value.data is not None


def test_a_permission_request_must_name_the_tool() -> None:
    data = sample_frame("agent.interaction.request")
    data["payload"] = {**data["payload"], "context": {}}
    with pytest.raises(FrameError, match="tool_name"):
        decode_frame(json.dumps(data))


def test_seq_starts_at_one() -> None:
    with pytest.raises(FrameError, match="seq"):
        decode_frame(json.dumps(sample_frame("agent.state.changed", seq=0)))


def test_timestamps_are_rfc3339_utc_with_milliseconds() -> None:
    import re

    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", utc_timestamp())
