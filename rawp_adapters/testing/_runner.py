"""Running the conformance kit: the behavioural contract, rule by rule, against any
adapter.

The author describes the adapter once, as a :class:`ConformanceSubject`.
:func:`check_adapter` runs every rule (:data:`RULES`) in fresh sessions of its own and
returns a :class:`ConformanceReport`; the pytest plugin
(:mod:`rawp_adapters.testing.pytest_plugin`) and ``rawp-adapters check`` run it rule by
rule with :func:`run_rule`.

Every session a rule opens is also checked against the invariants
(:func:`check_frames`), against the features it claims (no frames of a feature it
denies) and for processes left behind. A rule for a feature that an earlier session of
the run did not claim is skipped without starting the agent (:class:`KnownClaims`).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

import anyio

from rawp_adapters._errors import AgentFailure, SessionClosedError
from rawp_adapters.testing._catalogue import select_rules
from rawp_adapters.testing._outcomes import RuleAdvice, RuleFailed, RuleSkipped, with_frames
from rawp_adapters.testing._probe import KnownClaims, Probe
from rawp_adapters.testing._rule import ConformanceReport, Rule, RuleResult, Status
from rawp_adapters.testing._subject import ConformanceSubject


async def run_rule(
    subject: ConformanceSubject, rule: Rule, known: KnownClaims | None = None
) -> RuleResult:
    """Run one rule in sessions of its own; never raises for the subject's faults.
    ``known`` carries what the subject's sessions claimed from rule to rule."""
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="rawp-conformance-") as scratch:
        workspace = Path(scratch) if subject.workspace is None else Path(subject.workspace)
        workspace = Path(await anyio.Path(workspace).resolve())
        probe = Probe(subject, workspace, known)
        try:
            note = await rule.check(probe)
            await probe.verify()
        except Exception as exc:
            status, detail = _outcome(_leaf(exc), rule, subject, probe)
            return RuleResult(rule, status, detail, time.monotonic() - began)
    return RuleResult(rule, "passed", note or "", time.monotonic() - began)


def _leaf(exc: Exception) -> Exception:
    """The exception itself, or the first one a task group wrapped it in."""
    while isinstance(exc, ExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _outcome(
    exc: Exception, rule: Rule, subject: ConformanceSubject, probe: Probe
) -> tuple[Status, str]:
    if isinstance(exc, RuleSkipped):
        return "skipped", str(exc)
    if isinstance(exc, RuleAdvice):
        return "advised", str(exc)
    if isinstance(exc, RuleFailed):
        return "failed", str(exc)
    if isinstance(exc, TimeoutError):
        # The driver's waits say what they waited for and what came instead.
        message = f"[{rule.id}] {exc or f'a wait of {subject.timeout:g} s timed out'}"
        return "failed", with_frames(message, probe.driver, None)
    if isinstance(exc, (SessionClosedError, AgentFailure)):
        # The agent died or never started: the stream's last frames say why.
        message = f"[{rule.id}] the session ended under the rule: {exc}"
        return "failed", with_frames(message, probe.driver, None)
    raise exc


async def check_adapter(
    subject: ConformanceSubject, *, rules: Iterable[str] | None = None
) -> ConformanceReport:
    """Run every rule (or those named in ``rules``) against ``subject``, in order."""
    chosen = select_rules(rules)
    known = KnownClaims()
    return ConformanceReport([await run_rule(subject, rule, known) for rule in chosen])
