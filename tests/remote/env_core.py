"""An in-process SDK core whose every prompt runs ``env`` as one of its tools would and
says the output: what the processes of a core inside a worker get of its environment."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
from rawp_adapter_sdk.events import CoreEvent, TextChunk, TextEnd
from rawp_adapter_sdk.testing import CoreRun, FunctionCore


async def _run_env(prompt: str, run: CoreRun) -> AsyncIterator[CoreEvent]:
    done = await anyio.run_process(["env"])
    text = done.stdout.decode()
    yield TextChunk(0, text)
    yield TextEnd(0, text)


def env_core() -> FunctionCore:
    return FunctionCore(_run_env, name="env")
