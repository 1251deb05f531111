"""``rawp-adapters check``: the conformance kit against an installed adapter."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Literal

import anyio

from rawp_adapters._adapter import Adapter, AgentMetadata
from rawp_adapters._registry import create_adapter
from rawp_adapters.testing._rule import Rule
from rawp_adapters.testing._runner import run_rule
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
) -> int:
    """Run ``rules`` against fresh adapters built from ``metadata``, printing each result
    as it comes; 0 when none failed, 1 otherwise."""

    def make_adapter() -> Adapter:
        return create_adapter(metadata)

    subject = ConformanceSubject(
        make_adapter,
        workspace=workspace,
        prompts=prompts,
        adapter_type=metadata.adapter_type,
        permission_timeout_ms=permission_timeout_ms,
        timeout=timeout,
    )
    return anyio.run(partial(_check, subject, rules), backend=backend)


async def _check(subject: ConformanceSubject, rules: Sequence[Rule]) -> int:
    counts = {"passed": 0, "failed": 0, "skipped": 0, "advised": 0}
    for rule in rules:
        result = await run_rule(subject, rule)
        counts[result.status] += 1
        sys.stdout.write(f"{result}  ({result.seconds:.1f} s)\n")
        sys.stdout.flush()
    sys.stdout.write(", ".join(f"{n} {status}" for status, n in counts.items() if n) + "\n")
    return 1 if counts["failed"] else 0
