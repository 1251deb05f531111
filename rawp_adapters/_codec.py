"""JSONL codec: a frame is one compact JSON line, split only on ``\\n``.

U+2028 and U+2029 are written escaped (``\\u2028``), which JSON allows, so even a
reader that splits on Unicode line separators cannot break a frame; they decode
back to the same characters.

Hostile input is refused here, at the edge, so nothing downstream meets it: JSON
nested deeper than :data:`MAX_NESTING`, a string holding a lone UTF-16 surrogate
(it cannot be written back out as UTF-8), and a ``version`` of another major
protocol version. Writing never fails on text an agent produced: lone surrogates
are replaced with U+FFFD (and logged).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable
from typing import Any, Final, get_args

import msgspec
from pydantic import ValidationError
from pydantic_core import PydanticSerializationError

from rawp_adapters._errors import FrameError
from rawp_adapters._frames import (
    DPS_VERSION,
    ClientFrame,
    ControlFrame,
    Envelope,
    Payload,
    SessionErrorCode,
    TextDelta,
    TextDone,
    ThinkingDelta,
    ThinkingDone,
    UnknownFrame,
)
from rawp_adapters._logging import get_logger

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

MAX_NESTING: Final = 64
"""Deepest nesting of arrays and objects a frame may have [ours]."""

_LS: Final = "\u2028".encode()
_PS: Final = "\u2029".encode()
_SURROGATE_TEXT: Final = re.compile("[\ud800-\udfff]")
_MAYBE_SURROGATE: Final = re.compile(rb"\\u[dD][89a-fA-F]|\xed[\xa0-\xbf]")
"""A surrogate written as a JSON escape, or raw (``json.loads`` lets raw ones through)."""
_VERSION: Final = re.compile(r"rawp-dps-(\d+)\.\d+")
_MAJOR: Final = DPS_VERSION.split("-")[-1].split(".")[0]

_PLAIN_PAYLOADS: Final = frozenset(
    cls
    for cls in (TextDelta, TextDone, ThinkingDelta, ThinkingDone)
    if all(field.annotation in (str, int, bool) for field in cls.model_fields.values())
)
"""Payloads of nothing but required strings, integers and booleans: msgspec writes their
fields (in field order, as the model holds them) byte for byte as pydantic does, faster."""
_encode_json = msgspec.json.encode

_log = get_logger("rawp_adapters.codec")


def encode_frame(frame: Envelope) -> bytes:
    """One frame as one line of compact JSON, ending in ``\\n``.

    Text holding a lone surrogate (which UTF-8 cannot carry) is written with U+FFFD
    in its place, and logged: a frame is never lost, so ``seq`` keeps no gaps.
    """
    try:
        line = frame.model_dump_json(exclude_none=True).encode()
    except PydanticSerializationError:
        text = json.dumps(
            frame.model_dump(mode="json", exclude_none=True),
            ensure_ascii=False,
            separators=(",", ":"),
        )
        _log.warning(
            "lone surrogates replaced with U+FFFD in an outgoing frame",
            frame_type=frame.type,
            seq=frame.seq,
        )
        line = _SURROGATE_TEXT.sub("\ufffd", text).encode()
    if _LS in line or _PS in line:
        line = line.replace(_LS, b"\\u2028").replace(_PS, b"\\u2029")
    return line + b"\n"


class _Line(msgspec.Struct, gc=False):
    """A frame line as msgspec writes it: the envelope's fields in the model's order,
    ``metadata`` left out when UNSET. Untracked by the garbage collector (it costs a
    lot at this rate): a line never refers back to itself."""

    version: str
    type: str
    session_id: str
    seq: int
    timestamp: str
    metadata: msgspec.Raw | msgspec.UnsetType
    payload: dict[str, Any] | msgspec.Raw


_ENVELOPE_FIELDS: Final = (*Envelope.model_fields, "payload")
_LINE_FRAMES: Final = frozenset(
    cls for cls in _FRAME_CLASSES if tuple(cls.model_fields) == _ENVELOPE_FIELDS
)
"""Frame models with nothing beyond the envelope and a payload (all but UnknownFrame)."""
_encode_lines = msgspec.json.Encoder().encode_lines


def encode_frames(frames: Iterable[Envelope]) -> bytes:
    """The lines of ``frames``, one after the other: :func:`encode_frame`, byte for byte,
    for many frames at once, faster. The payload (and metadata) is written by its model's
    own serializer, the one ``model_dump_json`` uses for it (or for text and thinking by
    msgspec), and the lines by one msgspec call.

    A frame of another model, or with text that UTF-8 cannot carry, goes through
    :func:`encode_frame` itself.
    """
    frames = list(frames)
    lines: list[_Line] = []
    add, line, raw, unset = lines.append, _Line, msgspec.Raw, msgspec.UNSET
    line_frames, plain_payloads = _LINE_FRAMES, _PLAIN_PAYLOADS
    try:
        for frame in frames:
            if type(frame) not in line_frames:
                raise _NotALine
            fields = frame.__dict__  # faster than attribute lookups on the model
            payload = fields["payload"]
            metadata = fields["metadata"]
            add(
                line(
                    fields["version"],
                    fields["type"],
                    fields["session_id"],
                    fields["seq"],
                    fields["timestamp"],
                    unset if metadata is None else raw(_to_json(metadata)),
                    payload.__dict__ if type(payload) in plain_payloads else raw(_to_json(payload)),
                )
            )
        encoded = _encode_lines(lines)
    except (PydanticSerializationError, UnicodeEncodeError, _NotALine):
        return b"".join(map(encode_frame, frames))
    # Outside strings a line is ASCII, so the separators can be escaped anywhere.
    if b"\xe2" in encoded:  # their first byte, found by a fast scan
        encoded = _escape_separators(encoded)
    return encoded


class _NotALine(Exception):
    """A frame whose model has more than the envelope and a payload."""


def _to_json(model: Any) -> bytes:
    serialized: bytes = model.__pydantic_serializer__.to_json(model, exclude_none=True)
    return serialized


def _escape_separators(data: bytes) -> bytes:
    if _LS in data or _PS in data:
        return data.replace(_LS, b"\\u2028").replace(_PS, b"\\u2029")
    return data


def decode_frame(line: bytes | str) -> ClientFrame | ControlFrame | UnknownFrame:
    """Parse one line (a trailing ``\\r\\n`` or ``\\n`` is allowed).

    A frame whose ``type`` is not known comes back as :class:`UnknownFrame`, not an
    error (readers skip it). Anything else that is not a valid frame raises
    :class:`FrameError`: not JSON, not an object, nested deeper than
    :data:`MAX_NESTING`, a lone surrogate in a string, another major ``version``, or
    a payload that does not fit its type.
    """
    raw = line if isinstance(line, bytes) else line.encode("utf-8", "surrogatepass")
    try:
        data = json.loads(raw)
    except RecursionError:
        raise FrameError(f"nested deeper than {MAX_NESTING} levels") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise FrameError(f"not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise FrameError("a frame must be a JSON object")
    deep = raw.count(b"[") + raw.count(b"{") > MAX_NESTING
    if deep or _MAYBE_SURROGATE.search(raw):
        _check_values(data)
    return frame_from_dict(data)


def _check_values(data: dict[str, Any]) -> None:
    """Refuse nesting past :data:`MAX_NESTING` and strings with lone surrogates."""
    stack: list[tuple[Any, int, str]] = [(data, 1, "")]
    while stack:
        value, depth, path = stack.pop()
        if isinstance(value, str):
            if _SURROGATE_TEXT.search(value):
                where = path or "(frame)"
                raise FrameError(
                    f"{where}: text holds a lone UTF-16 surrogate, which UTF-8 cannot carry",
                    frame_type=_type_of(data),
                    data=data,
                )
            continue
        if isinstance(value, dict | list):
            if depth > MAX_NESTING:
                raise FrameError(
                    f"nested deeper than {MAX_NESTING} levels", frame_type=_type_of(data)
                )
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for key, item in items:
                name = f"{path}.{key}" if path else str(key)
                stack.append((key, depth, name))
                stack.append((item, depth + 1, name))


def _type_of(data: dict[str, Any]) -> str | None:
    frame_type = data.get("type")
    return frame_type if isinstance(frame_type, str) and frame_type.isprintable() else None


def check_version(version: object) -> None:
    """Any ``rawp-dps-<our major>.<minor>`` is read (a later minor only adds optional
    fields and frame types, which readers ignore); anything else is refused."""
    if version == DPS_VERSION:
        return
    match = _VERSION.fullmatch(version) if isinstance(version, str) else None
    if match is None or match.group(1) != _MAJOR:
        raise FrameError(
            f"unsupported version {version!r}: this session speaks {DPS_VERSION} "
            f"(any rawp-dps-{_MAJOR}.x is read)",
            code=SessionErrorCode.UNSUPPORTED_VERSION,
        )


def frame_from_dict(data: dict[str, Any]) -> ClientFrame | ControlFrame | UnknownFrame:
    frame_type = data.get("type")
    if not isinstance(frame_type, str):
        raise FrameError("a frame needs a string 'type'", data=data)
    if "version" in data:
        try:
            check_version(data["version"])
        except FrameError as exc:
            raise FrameError(str(exc), code=exc.code, frame_type=frame_type, data=data) from None
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


_last_ms = -1
_last_second = -1
_last_prefix = ""
_last_timestamp = ""


def utc_timestamp() -> str:
    """Now as RFC 3339 UTC with milliseconds and ``Z``, e.g. ``2026-11-21T10:00:00.123Z``
    (made once per millisecond)."""
    global _last_ms, _last_second, _last_prefix, _last_timestamp
    ms = int(time.time() * 1000)
    if ms != _last_ms:
        second, fraction = divmod(ms, 1000)
        if second != _last_second:
            _last_prefix = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
            _last_second = second
        _last_timestamp = f"{_last_prefix}.{fraction:03d}Z"
        _last_ms = ms
    return _last_timestamp
