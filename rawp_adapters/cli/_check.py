"""``rawp-adapters check``: the conformance kit against an installed adapter."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Literal

from rawp_adapters._adapter import AgentMetadata
from rawp_adapters._registry import create_adapter
from rawp_adapters.testing._parallel import run_rules
from rawp_adapters.testing._rule import Rule
from rawp_adapters.testing._subject import ConformanceSubject, Prompts


def check_command(
    metadata: AgentMetadata,
    *,
    prompts: Prompts,
    rules: Sequence[Rule],
    workspace: Path | None,
    timeout: float,
    permission_timeout_ms: int,
    backend: Literal["asyncio", "trio"],
    jobs: int,
) -> int:
    """Run ``rules`` against fresh adapters built from ``metadata``, up to ``jobs`` at
    once, printing each result in the rules' order as it comes; 0 when none failed, 1
    otherwise."""
    make_subject = partial(
        _subject,
        metadata,
        prompts=prompts,
        workspace=workspace,
        timeout=timeout,
        permission_timeout_ms=permission_timeout_ms,
    )
    counts = {"passed": 0, "failed": 0, "skipped": 0, "advised": 0}
    for result in run_rules(make_subject, rules, jobs=jobs, backend=backend):
        counts[result.status] += 1
        sys.stdout.write(f"{result}  ({result.seconds:.1f} s)\n")
        sys.stdout.flush()
    sys.stdout.write(", ".join(f"{n} {status}" for status, n in counts.items() if n) + "\n")
    return 1 if counts["failed"] else 0


def _subject(
    metadata: AgentMetadata,
    *,
    prompts: Prompts,
    workspace: Path | None,
    timeout: float,
    permission_timeout_ms: int,
) -> ConformanceSubject:
    return ConformanceSubject(
        partial(create_adapter, metadata),
        workspace=workspace,
        prompts=prompts,
        adapter_type=metadata.adapter_type,
        permission_timeout_ms=permission_timeout_ms,
        timeout=timeout,
    )
