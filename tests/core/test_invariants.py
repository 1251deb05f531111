"""The invariant checker catches each kind of violation and passes a good stream."""

from __future__ import annotations

from typing import Any

import pytest

from rawp_adapters.testing import InvariantError, assert_valid_stream, check_frames

SID = "6f1c2a8e-9d0b-4a43-9a57-2f0e1c6b1d11"


def frame(frame_type: str, seq: int, **payload: Any) -> dict[str, Any]:
    return {
        "type": frame_type,
        "session_id": SID,
        "seq": seq,
        "timestamp": "2026-11-21T10:00:00.000Z",
        "payload": payload,
    }


def stream(*items: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Client frames numbered 1, 2, 3…; control frames (by type) get their own seq."""
    out = []
    seq = 0
    for frame_type, payload in items:
        if frame_type.startswith("control."):
            out.append(frame(frame_type, 1, **payload))
        else:
            seq += 1
            out.append(frame(frame_type, seq, **payload))
    return out


CAPS = ("session.capabilities", {"adapter_type": "x", "features": {"adapter_type": "x"}})
START = ("session.turn.start", {"turn_id": "t1"})
END = ("session.turn.end", {"turn_id": "t1", "stop_reason": "end_turn"})
CLOSED = ("session.closed", {"reason": "explicit"})
DELTA = ("agent.text.delta", {"turn_id": "t1", "index": 0, "text": "hi"})
ASK = (
    "agent.interaction.request",
    {
        "interaction_id": "i1",
        "interaction_type": "PERMISSION",
        "timeout_ms": 10,
        "turn_id": "t1",
        "context": {"tool_name": "bash"},
    },
)
FATAL = ("agent.error", {"severity": "fatal", "error_code": "SIGNAL_EXIT", "message": "x"})


def rules(frames: list[dict[str, Any]], *, complete: bool = True) -> set[str]:
    return {v.rule for v in check_frames(frames, complete=complete)}


def test_a_good_stream_passes() -> None:
    good = stream(
        CAPS,
        START,
        DELTA,
        ASK,
        ("control.interaction.response", {"interaction_id": "i1", "decision": "allow"}),
        (
            "agent.interaction.resolved",
            {"interaction_id": "i1", "outcome": "allowed", "decided_by": "master"},
        ),
        END,
        CLOSED,
    )
    assert check_frames(good) == []
    assert_valid_stream(good)


def test_a_stream_that_does_not_start_with_capabilities_is_caught() -> None:
    assert "capabilities-first" in rules(stream(START, END, CLOSED))


def test_capabilities_sent_twice_is_caught() -> None:
    assert "capabilities-first" in rules(stream(CAPS, CAPS, CLOSED))


def test_a_gap_in_seq_is_caught() -> None:
    frames = stream(CAPS, START, END, CLOSED)
    frames[2]["seq"] = 4
    assert "seq-contiguous" in rules(frames)


def test_seq_not_starting_at_one_is_caught() -> None:
    frames = stream(CAPS, CLOSED)
    frames[0]["seq"] = 2
    frames[1]["seq"] = 3
    assert "seq-contiguous" in rules(frames)


def test_frames_of_two_sessions_are_caught() -> None:
    frames = stream(CAPS, CLOSED)
    frames[1]["session_id"] = "other"
    assert "one-session" in rules(frames)


def test_a_turn_started_inside_a_turn_is_caught() -> None:
    second = ("session.turn.start", {"turn_id": "t2"})
    assert "one-prompt" in rules(stream(CAPS, START, second, END, CLOSED))


def test_a_turn_end_without_its_start_is_caught() -> None:
    assert "turn-pairing" in rules(stream(CAPS, END, CLOSED))


def test_a_turn_left_open_at_close_is_caught() -> None:
    assert "turn-pairing" in rules(stream(CAPS, START, CLOSED))


def test_an_error_end_without_agent_error_first_is_caught() -> None:
    error_end = ("session.turn.end", {"turn_id": "t1", "stop_reason": "error"})
    assert "error-before-end" in rules(stream(CAPS, START, error_end, CLOSED))
    assert check_frames(stream(CAPS, START, FATAL, error_end, CLOSED)) == []


def test_turn_frames_outside_their_turn_are_caught() -> None:
    assert "turn-scope" in rules(stream(CAPS, START, END, DELTA, CLOSED))


def test_anything_after_session_closed_is_caught() -> None:
    assert "closed-last" in rules(stream(CAPS, CLOSED, CAPS))


def test_a_stream_without_session_closed_is_incomplete() -> None:
    assert "closed-last" in rules(stream(CAPS, START, END))
    assert rules(stream(CAPS, START, END), complete=False) == set()


def test_an_interaction_never_resolved_is_caught() -> None:
    assert "interactions-resolved" in rules(stream(CAPS, START, ASK), complete=False)


RESOLVED = (
    "agent.interaction.resolved",
    {"interaction_id": "i1", "outcome": "timed_out", "decided_by": "deadline", "turn_id": "t1"},
)


def test_an_interaction_resolved_before_its_turn_ends_passes() -> None:
    assert check_frames(stream(CAPS, START, ASK, RESOLVED, END), complete=False) == []


def test_an_interaction_still_open_when_its_turn_ends_is_caught() -> None:
    assert "interactions-resolved" in rules(stream(CAPS, START, ASK, END), complete=False)


def test_an_interaction_resolved_twice_or_never_requested_is_caught() -> None:
    assert "interactions-resolved" in rules(
        stream(CAPS, START, ASK, RESOLVED, RESOLVED, END), complete=False
    )
    assert "interactions-resolved" in rules(stream(CAPS, START, RESOLVED, END), complete=False)


def test_an_answer_after_the_resolution_must_be_reported() -> None:
    late = ("control.interaction.response", {"interaction_id": "i1", "decision": "allow"})
    frames = stream(CAPS, START, ASK, RESOLVED, late, END, CLOSED)
    assert "interactions-resolved" in rules(frames)
    reported = (
        "session.error",
        {"error_code": "UNKNOWN_INTERACTION", "message": "x", "fatal": False},
    )
    assert check_frames(stream(CAPS, START, ASK, RESOLVED, late, reported, END, CLOSED)) == []


def test_an_answer_to_an_unknown_interaction_must_be_reported() -> None:
    unknown = ("control.interaction.response", {"interaction_id": "nope", "decision": "allow"})
    assert "interactions-resolved" in rules(stream(CAPS, unknown, CLOSED))
    reported = (
        "session.error",
        {"error_code": "UNKNOWN_INTERACTION", "message": "x", "fatal": False},
    )
    assert check_frames(stream(CAPS, unknown, reported, CLOSED)) == []


def test_tool_output_for_a_call_that_is_not_running_is_caught() -> None:
    out = ("tool.invoke.stream", {"invocation_id": "c1", "output": "x"})
    assert "tool-pairing" in rules(stream(CAPS, out, CLOSED))


def test_a_tool_call_left_without_a_result_at_turn_end_is_caught() -> None:
    req = (
        "tool.invoke.request",
        {"invocation_id": "c1", "tool_name": "bash", "input": {}, "turn_id": "t1"},
    )
    assert "tool-pairing" in rules(stream(CAPS, START, req, END, CLOSED))


def test_two_results_for_one_tool_call_are_caught() -> None:
    req = ("tool.invoke.request", {"invocation_id": "c1", "tool_name": "bash", "input": {}})
    res = ("tool.invoke.result", {"invocation_id": "c1", "output_type": "text"})
    assert "tool-pairing" in rules(stream(CAPS, req, res, res, CLOSED))


def test_an_invalid_frame_is_reported_not_raised() -> None:
    frames = stream(CAPS, CLOSED)
    frames.insert(1, {"type": "agent.text.delta", "payload": {}})
    assert "valid-frames" in rules(frames)


def test_assert_valid_stream_lists_every_broken_rule() -> None:
    with pytest.raises(InvariantError) as info:
        assert_valid_stream(stream(START, END))
    assert {v.rule for v in info.value.violations} == {"capabilities-first", "closed-last"}
    assert "capabilities-first" in str(info.value)
