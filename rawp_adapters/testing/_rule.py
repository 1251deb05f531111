"""A rule of the conformance kit and what running rules gives (how a rule ends other
than passing is in :mod:`._outcomes`). Tiers:

- ``MUST``: what every adapter keeps; a failure fails the run.
- ``CAPABILITY``: what an adapter keeps for the features it claims in
  ``session.capabilities``; skipped (with the reason) for features it does not claim.
- ``ADVISORY``: timings; reported, never failing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from rawp_adapters.testing._probe import Probe

Tier = Literal["MUST", "CAPABILITY", "ADVISORY"]
Status = Literal["passed", "failed", "skipped", "advised"]


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule of the contract: ``id`` names it in reports, ``summary`` says what it
    requires."""

    id: str
    tier: Tier
    summary: str
    check: Callable[[Probe], Awaitable[str | None]] = field(repr=False)


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
