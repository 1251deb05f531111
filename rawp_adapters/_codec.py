"""JSONL codec: a frame is one compact JSON line, split only on ``\\n``.

U+2028 and U+2029 are written escaped (``\\u2028``), which JSON allows, so even a
reader that splits on Unicode line separators cannot break a frame; they decode
back to the same characters.
"""

from __future__ import annotations

import json
import time
from typing import Any, Final, get_args

from pydantic import ValidationError

from rawp_adapters._errors import FrameError
from rawp_adapters._frames import ClientFrame, ControlFrame, Envelope, Payload, UnknownFrame

_FRAME_CLASSES: Final[tuple[type[Envelope], ...]] = (
    *get_args(ClientFrame),
    *get_args(ControlFrame),
)

FRAME_CLASS_BY_TYPE: Final[dict[str, type[Envelope]]] = {
    cls.model_fields["type"].default: cls for cls in _FRAME_CLASSES
}
"""Every known ``type`` string and the frame model that carries it."""

FRAME_CLASS_BY_PAYLOAD: Final[dict[type[Payload], type[Envelope]]] = {
    cls.model_fields["payload"].annotation: cls  # type: ignore[misc]
    for cls in _FRAME_CLASSES
}
"""The frame model for each payload model."""

CLIENT_FRAME_TYPES: Final[frozenset[str]] = frozenset(
    cls.model_fields["type"].default for cls in get_args(ClientFrame)
)
CONTROL_FRAME_TYPES: Final[frozenset[str]] = frozenset(
    cls.model_fields["type"].default for cls in get_args(ControlFrame)
)

_LS: Final = "\u2028".encode()
_PS: Final = "\u2029".encode()


def encode_frame(frame: Envelope) -> bytes:
    """One frame as one line of compact JSON, ending in ``\\n``."""
    line = frame.model_dump_json(exclude_none=True).encode()
    if _LS in line or _PS in line:
        line = line.replace(_LS, b"\\u2028").replace(_PS, b"\\u2029")
    return line + b"\n"


def decode_frame(line: bytes | str) -> ClientFrame | ControlFrame | UnknownFrame:
    """Parse one line (a trailing ``\\r\\n`` or ``\\n`` is allowed).

    A frame whose ``type`` is not known comes back as :class:`UnknownFrame`, not an
    error (readers skip it). Anything else that is not a valid frame raises
    :class:`FrameError`.
    """
    try:
        data = json.loads(line)
    except (ValueError, UnicodeDecodeError) as exc:
        raise FrameError(f"not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise FrameError("a frame must be a JSON object")
    return frame_from_dict(data)


def frame_from_dict(data: dict[str, Any]) -> ClientFrame | ControlFrame | UnknownFrame:
    frame_type = data.get("type")
    if not isinstance(frame_type, str):
        raise FrameError("a frame needs a string 'type'", data=data)
    cls = FRAME_CLASS_BY_TYPE.get(frame_type)
    try:
        if cls is None:
            return UnknownFrame.model_validate(data)
        return cls.model_validate(data)  # type: ignore[return-value]
    except ValidationError as exc:
        raise FrameError(_describe(frame_type, exc), frame_type=frame_type, data=data) from None


def _describe(frame_type: str, exc: ValidationError) -> str:
    problems = "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or '(frame)'}: {err['msg']}"
        for err in exc.errors()[:5]
    )
    return f"invalid {frame_type} frame: {problems}"


_last_second = -1
_last_prefix = ""


def utc_timestamp() -> str:
    """Now as RFC 3339 UTC with milliseconds and ``Z``, e.g. ``2026-11-21T10:00:00.123Z``."""
    global _last_second, _last_prefix
    now = time.time()
    second = int(now)
    if second != _last_second:
        _last_prefix = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        _last_second = second
    return f"{_last_prefix}.{int((now - second) * 1000):03d}Z"
