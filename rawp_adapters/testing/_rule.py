"""A rule of the conformance kit, how a rule ends other than passing, and what running
rules gives. Tiers:

- ``MUST``: what every adapter keeps; a failure fails the run.
- ``CAPABILITY``: what an adapter keeps for the features it claims in
  ``session.capabilities``; skipped (with the reason) for features it does not claim.
- ``ADVISORY``: timings; reported, never failing.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, NoReturn

from rawp_adapters._frames import Envelope
from rawp_adapters.host import SessionLike
from rawp_adapters.testing._driver import SessionDriver

if TYPE_CHECKING:
    from rawp_adapters.testing._probe import Probe

Tier = Literal["MUST", "CAPABILITY", "ADVISORY"]
Status = Literal["passed", "failed", "skipped", "advised"]

_CONTEXT_FRAMES = 4
"""Frames shown either side of the one a failure points at."""


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule of the contract: ``id`` names it in reports, ``summary`` says what it
    requires."""

    id: str
    tier: Tier
    summary: str
    check: Callable[[Probe], Awaitable[str | None]] = field(repr=False)


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


@dataclass(frozen=True, slots=True)
class RuleResult:
    rule: Rule
    status: Status
    detail: str
    """The failure (with frames), the skip reason, the advice or a note on a pass."""
    seconds: float

    def __str__(self) -> str:
        label = {"passed": "PASS", "failed": "FAIL", "skipped": "SKIP", "advised": "NOTE"}
        head = f"{label[self.status]}  {self.rule.tier:<10}  {self.rule.id}"
        if not self.detail:
            return head
        first, *rest = self.detail.splitlines()
        return "\n".join([f"{head}: {first}", *("      " + line for line in rest)])


@dataclass(frozen=True, slots=True)
class ConformanceReport:
    results: list[RuleResult]

    @property
    def failed(self) -> list[RuleResult]:
        return [r for r in self.results if r.status == "failed"]

    @property
    def ok(self) -> bool:
        """No rule failed (skips and advice do not count)."""
        return not self.failed

    def format(self) -> str:
        counts = {
            status: sum(r.status == status for r in self.results)
            for status in ("passed", "failed", "skipped", "advised")
        }
        summary = ", ".join(f"{n} {status}" for status, n in counts.items() if n)
        return "\n".join([*map(str, self.results), summary]) + "\n"
