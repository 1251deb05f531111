"""An in-process SDK core for the wire tests: ``PACE n hz`` says ``n`` numbered text
chunks at ``hz`` per second; ``BURST n`` says them at once."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
from rawp_adapter_sdk.events import CoreEvent, TextChunk
from rawp_adapter_sdk.testing import CoreRun, FunctionCore


async def _run(prompt: str, run: CoreRun) -> AsyncIterator[CoreEvent]:
    word, count, *rest = prompt.split()
    gap = 1 / float(rest[0]) if word == "PACE" else 0.0
    for index in range(int(count)):
        yield TextChunk(0, f"{index} ")
        if gap:
            await anyio.sleep(gap)


def pace_core() -> FunctionCore:
    return FunctionCore(_run, name="pace")
