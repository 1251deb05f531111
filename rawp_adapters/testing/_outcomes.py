"""How a conformance rule ends other than passing: skipped, failed (with the frames
around the failure) or advised."""

from __future__ import annotations

import json
from typing import NoReturn

from rawp_adapters._frames import Envelope
from rawp_adapters.host import SessionLike
from rawp_adapters.testing._driver import SessionDriver

_CONTEXT_FRAMES = 4
"""Frames shown either side of the one a failure points at."""


class RuleSkipped(Exception):
    """The rule does not apply to this subject (the reason is the message)."""


class RuleFailed(AssertionError):
    """The subject broke the rule: what is wrong, and the frames around it."""


class RuleAdvice(Exception):
    """An advisory rule's limit was exceeded (the measurement is the message)."""


def fail(rule: str, message: str, d: SessionDriver[SessionLike] | None, at: int | None) -> NoReturn:
    """Raise :class:`RuleFailed` for ``rule`` with the frames around ``at``."""
    raise RuleFailed(with_frames(f"[{rule}] {message}", d, at))


def with_frames(message: str, d: SessionDriver[SessionLike] | None, at: int | None) -> str:
    """``message`` followed by the frames around ``at`` (the last frame for ``None``)."""
    if d is None or not d.frames:
        return message
    frames = d.frames
    at = len(frames) - 1 if at is None else max(0, min(at, len(frames) - 1))
    lo, hi = max(0, at - _CONTEXT_FRAMES), min(len(frames), at + _CONTEXT_FRAMES + 1)
    lines = [message, f"frames {lo}..{hi - 1} of {len(frames)}:"]
    lines += [f"{'>' if i == at else ' '} {i:>4} {_frame_line(frames[i])}" for i in range(lo, hi)]
    return "\n".join(lines)


def _frame_line(frame: Envelope) -> str:
    payload = getattr(frame, "payload", None)
    shown = payload.model_dump(mode="json", exclude_none=True) if payload is not None else {}
    text = json.dumps(shown, ensure_ascii=False)
    return f"{frame.type} {text if len(text) <= 160 else text[:157] + '...'}"
