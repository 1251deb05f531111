"""Frames on the wire, sans-IO: several frames of one session per NATS message, as
their JSON lines one after the other, with the ``seq`` range in the message's headers
(``specs/remote.md``, "Batches")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from rawp_adapters._codec import encode_frames
from rawp_adapters.frames import ClientFrame
from rawp_adapters.remote._names import FIRST_SEQ, LAST_SEQ, MSG_ID

HEADROOM: Final = 1024
"""Bytes of a server's ``max_payload`` left for a message's headers."""


class FrameTooLarge(ValueError):
    """A single frame that no message can carry (its line is over the limit)."""


@dataclass(frozen=True, slots=True)
class Batch:
    first: int
    last: int
    data: bytes

    def headers(self, session_id: str) -> dict[str, str]:
        return {
            MSG_ID: f"{session_id}:{self.first}-{self.last}",
            FIRST_SEQ: str(self.first),
            LAST_SEQ: str(self.last),
        }


def batches(frames: Sequence[ClientFrame], max_bytes: int) -> list[Batch]:
    """``frames`` (one session's, consecutive ``seq``) in as few messages of at most
    ``max_bytes`` as they fit. Raises :class:`FrameTooLarge` for a frame alone over it."""
    lines = encode_frames(frames).splitlines(keepends=True)
    out: list[Batch] = []
    start, size = 0, 0
    for index, line in enumerate(lines):
        if len(line) > max_bytes:
            frame = frames[index]
            raise FrameTooLarge(
                f"frame {frame.type} seq {frame.seq} is {len(line)} bytes; "
                f"a message carries at most {max_bytes}"
            )
        if size + len(line) > max_bytes:
            out.append(_batch(frames, lines, start, index))
            start, size = index, 0
        size += len(line)
    if start < len(lines):
        out.append(_batch(frames, lines, start, len(lines)))
    return out


def _batch(frames: Sequence[ClientFrame], lines: list[bytes], start: int, end: int) -> Batch:
    return Batch(frames[start].seq, frames[end - 1].seq, b"".join(lines[start:end]))


def seq_range(headers: Mapping[str, str] | None) -> tuple[int, int] | None:
    """The ``seq`` of a stored message's first and last frame, from its headers; ``None``
    when they are missing or not numbers."""
    headers = headers or {}
    first, last = headers.get(FIRST_SEQ, ""), headers.get(LAST_SEQ, "")
    if not (first.isdigit() and last.isdigit()):
        return None
    return int(first), int(last)


def frame_lines(data: bytes) -> list[bytes]:
    """A message's frames' JSON lines (no empty ones)."""
    return [line for line in data.split(b"\n") if line.strip()]
