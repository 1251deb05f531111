"""Rules run side by side (``rawp-adapters check --jobs N``), for agents whose sessions
take seconds each to start and end.

After the first, each rule runs in a worker process of its own at a time: the kit tells
the processes a session left behind by this process's descendants, which a rule running
beside it in the same process would blur. Each worker is told what the first rule's
sessions claimed, so a rule for a feature not claimed starts no agent. Results come in
the order of the rules, each as soon as it and every rule before it are done.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from functools import partial
from typing import Literal

import anyio

from rawp_adapters._frames import Features
from rawp_adapters.testing._catalogue import select_rules
from rawp_adapters.testing._probe import KnownClaims
from rawp_adapters.testing._rule import Rule, RuleResult
from rawp_adapters.testing._runner import run_rule
from rawp_adapters.testing._subject import ConformanceSubject

Backend = Literal["asyncio", "trio"]
SubjectFactory = Callable[[], ConformanceSubject]
"""Builds the subject in the process that runs a rule; with ``jobs`` over 1 it must
pickle (a module-level function, or a ``functools.partial`` of one)."""


def run_rules(
    make_subject: SubjectFactory, rules: Sequence[Rule], *, jobs: int, backend: Backend
) -> Iterator[RuleResult]:
    """Each rule's result, in the order of ``rules``; up to ``jobs`` rules at once after
    the first, which runs alone in this process: an agent's first start in a home often
    sets that home up (opencode creates its database), and starts side by side would race
    over it."""
    if not rules:
        return
    subject = make_subject()
    known = KnownClaims()
    yield anyio.run(partial(run_rule, subject, rules[0], known), backend=backend)
    rules = rules[1:]
    if min(jobs, len(rules)) <= 1:
        for rule in rules:
            yield anyio.run(partial(run_rule, subject, rule, known), backend=backend)
        return
    spawn = multiprocessing.get_context("spawn")  # no copy of this process's threads
    pool = ProcessPoolExecutor(max_workers=min(jobs, len(rules)), mp_context=spawn)
    try:
        running: list[Future[RuleResult]] = [
            pool.submit(_run_in_worker, make_subject, rule.id, backend, known.features)
            for rule in rules
        ]
        for result in running:
            yield result.result()
    finally:
        pool.shutdown(cancel_futures=True)


def _run_in_worker(
    make_subject: SubjectFactory, rule_id: str, backend: Backend, claimed: Features | None
) -> RuleResult:
    (rule,) = select_rules([rule_id])
    known = KnownClaims(claimed)
    return anyio.run(partial(run_rule, make_subject(), rule, known), backend=backend)
