"""The ADVISORY rules: timings; reported, never failing."""

from __future__ import annotations

import time

from rawp_adapters.testing._outcomes import RuleAdvice
from rawp_adapters.testing._probe import Probe
from rawp_adapters.testing._rules.shared import NO_BUSY, busy_turn, needs

ABORT_ADVISED_S = 0.2
"""An abort should end its turn within this."""
CLOSE_ADVISED_S = 1.0
"""An explicit end should give ``session.closed`` within this."""


async def abort_latency(p: Probe) -> str:
    needs(p.prompts.busy, NO_BUSY)
    async with p.session() as d:
        turn_id = await busy_turn(p, d)
        sent = time.monotonic()
        await d.send(d.control.abort(turn_id))
        await d.wait_turn(turn_id)
        took = time.monotonic() - sent
    return _advise(f"the aborted turn ended in {took * 1000:.0f} ms", took, ABORT_ADVISED_S)


async def close_latency(p: Probe) -> str:
    async with p.session() as d:
        await d.prompt(p.prompts.answer)
        sent = time.monotonic()
        await d.end()
        took = time.monotonic() - sent
    return _advise(f"session.closed came {took * 1000:.0f} ms after the end", took, CLOSE_ADVISED_S)


def _advise(measured: str, took: float, limit: float) -> str:
    if took > limit:
        raise RuleAdvice(f"{measured} (advised: under {limit * 1000:.0f} ms)")
    return measured
