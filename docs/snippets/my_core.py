"""An SDK core: an in-process agent library behind the ``sdk`` adapter."""

from __future__ import annotations

from collections.abc import AsyncIterator

from rawp_adapter_sdk import CoreEnvironment, CoreFeatures, PermissionCallback
from rawp_adapter_sdk.events import CoreEvent, Stopped, TextChunk, TextEnd


class UpperCore:
    """Answers every prompt in capitals."""

    name = "upper"
    version = "0.1.0"
    features = CoreFeatures(abort=True)

    async def start(self, env: CoreEnvironment) -> None:
        self.workspace = env.workspace

    async def run(self, prompt: str, permission: PermissionCallback) -> AsyncIterator[CoreEvent]:
        yield TextChunk(0, prompt.upper())
        yield TextEnd(0, prompt.upper())
        yield Stopped("end_turn")

    async def cancel(self) -> None:
        pass  # nothing runs long enough to stop

    async def close(self) -> None:
        pass
