"""construct_unchecked: a model built without validation is the validated one."""

from __future__ import annotations

from rawp_adapters.frames import (
    DPS_VERSION,
    TextDelta,
    TextDeltaFrame,
    ThinkingDelta,
    construct_unchecked,
)

FIELDS = {"turn_id", "index", "text"}


def test_a_payload_built_unchecked_equals_and_serializes_as_the_validated_one() -> None:
    validated = ThinkingDelta(turn_id="t", index=2, text="why")
    built = construct_unchecked(
        ThinkingDelta, {"turn_id": "t", "index": 2, "text": "why", "redacted": False}, FIELDS
    )
    assert built == validated
    assert built.model_fields_set == validated.model_fields_set
    assert built.model_dump_json() == validated.model_dump_json()
    assert built.model_dump_json(exclude_unset=True) == validated.model_dump_json(
        exclude_unset=True
    )


def test_a_frame_built_unchecked_around_a_payload_serializes_as_the_validated_one() -> None:
    payload = TextDelta(turn_id="t", index=0, text="hi \u2028")
    envelope = {
        "version": DPS_VERSION,
        "type": "agent.text.delta",
        "session_id": "s",
        "seq": 7,
        "timestamp": "2026-11-24T00:00:00.000Z",
        "metadata": None,
        "payload": payload,
    }
    names = {"version", "session_id", "seq", "timestamp", "payload", "metadata"}
    validated = TextDeltaFrame.model_validate(
        {**envelope, "payload": payload.model_dump(exclude_unset=True)}
    )
    assert construct_unchecked(TextDeltaFrame, envelope, names) == validated
    assert construct_unchecked(TextDeltaFrame, envelope, names).model_dump_json() == (
        validated.model_dump_json()
    )


def test_the_fields_set_given_is_copied_into_each_model_not_shared() -> None:
    names = set(FIELDS)
    first = construct_unchecked(TextDelta, {"turn_id": "t", "index": 0, "text": "a"}, names)
    names.add("extra")
    assert first.model_fields_set == FIELDS
