"""A Master's reading of a message of frames, sans-IO: each line as
:func:`rawp_adapters._codec.decode_frame` reads it, with a fast path for the frames
that stream (text and thinking, deltas and done).

Those are decoded by msgspec into structs of exactly their fields' JSON types (no
field more, none of another type, ``seq`` ≥ 1, this ``version``) and built into their
models without pydantic checking them again: what msgspec accepts there pydantic
would accept and read the same. Any other line, or one msgspec refuses for any reason,
is read by ``decode_frame`` itself, so its frame or its error is the one stdio gives.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Union

import msgspec

from rawp_adapters._codec import FRAME_CLASS_BY_PAYLOAD, decode_frame
from rawp_adapters._errors import FrameError
from rawp_adapters._frames import (
    DPS_VERSION,
    ClientFrame,
    ControlFrame,
    Envelope,
    Payload,
    TextDelta,
    TextDone,
    ThinkingDelta,
    ThinkingDone,
    UnknownFrame,
)
from rawp_adapters._unchecked import construct_unchecked
from rawp_adapters.remote._batches import frame_lines

Frame = ClientFrame | ControlFrame | UnknownFrame

_STREAMING: Final = (TextDelta, TextDone, ThinkingDelta, ThinkingDone)
_JSON_TYPES: Final = (str, int, bool)


class _Model:
    """What builds one fast-path line's frame: its models and their fields' defaults."""

    def __init__(self, payload: type[Payload]) -> None:
        self.payload = payload
        self.frame: type[Envelope] = FRAME_CLASS_BY_PAYLOAD[payload]
        self.type: str = self.frame.model_fields["type"].default
        self.defaults = {
            name: info.default
            for name, info in payload.model_fields.items()
            if not info.is_required()
        }
        self.names = set(payload.model_fields)

    def struct(self) -> type[msgspec.Struct]:
        fields: list[Any] = []
        for name, info in self.payload.model_fields.items():
            if info.annotation not in _JSON_TYPES or info.metadata:
                raise TypeError(f"{self.payload.__name__}.{name} is not a plain JSON field")
            if name in self.defaults:  # UNSET when absent: pydantic leaves it out of fields_set
                fields.append((name, info.annotation | msgspec.UnsetType, msgspec.UNSET))
            else:
                fields.append((name, info.annotation))
        payload = msgspec.defstruct(
            f"_{self.payload.__name__}", fields, forbid_unknown_fields=True, gc=False
        )
        envelope = [
            ("version", str),
            ("session_id", str),
            ("seq", Annotated[int, msgspec.Meta(ge=1)]),
            ("timestamp", str),
            ("payload", payload),
        ]
        return msgspec.defstruct(
            f"_{self.payload.__name__}Line",
            envelope,
            tag_field="type",
            tag=self.type,
            forbid_unknown_fields=True,
            gc=False,
        )


_MODELS: Final = {(model := _Model(payload)).struct(): model for payload in _STREAMING}
_decode_line: Final = msgspec.json.Decoder(Union[tuple(_MODELS)]).decode  # noqa: UP007
_ENVELOPE_SET: Final = {"version", "type", "session_id", "seq", "timestamp", "payload"}
"""The fields a fast-path line holds (one with ``metadata`` takes the slow path)."""


def read_frames(data: bytes) -> tuple[list[Frame], list[FrameError]]:
    """The frames of one message (``specs/remote.md``, "Batches") in order, and the
    errors of the lines that are none (each line's loss alone)."""
    frames: list[Frame] = []
    errors: list[FrameError] = []
    for line in frame_lines(data):
        try:
            frames.append(_fast(line))
        except (msgspec.DecodeError, _SlowPath):
            try:
                frames.append(decode_frame(line))
            except FrameError as exc:
                errors.append(exc)
    return frames, errors


class _SlowPath(Exception):
    """A line msgspec read that the fast path leaves to ``decode_frame``."""


def _fast(line: bytes) -> Frame:
    decoded = _decode_line(line)
    if decoded.version != DPS_VERSION:
        raise _SlowPath
    model = _MODELS[type(decoded)]
    fields = msgspec.structs.asdict(decoded.payload)  # in the model's field order
    payload_set = model.names
    for name, default in model.defaults.items():
        if fields[name] is msgspec.UNSET:
            fields[name] = default
            payload_set = payload_set - {name}
    payload = construct_unchecked(model.payload, fields, payload_set)
    envelope = {
        "version": decoded.version,
        "type": model.type,
        "session_id": decoded.session_id,
        "seq": decoded.seq,
        "timestamp": decoded.timestamp,
        "metadata": None,
        "payload": payload,
    }
    return construct_unchecked(model.frame, envelope, _ENVELOPE_SET)  # type: ignore[return-value]
