"""An SDK core for a library that runs only on asyncio, behind a session on any loop."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator

from rawp_adapter_sdk import CoreEnvironment, CoreError, CoreFeatures, PermissionCallback
from rawp_adapter_sdk.events import CoreEvent, Stopped, TextChunk, TextEnd
from rawp_adapter_sdk.islands import AsyncioIsland, Emit, Finished


async def asyncio_only_sdk(prompt: str, on_word: Emit[str]) -> str:
    """Stands for the SDK: it streams words with a callback and needs asyncio's loop."""
    text = ""
    for word in prompt.split():
        await asyncio.sleep(0)
        on_word(f"{word} ")
        text += f"{word} "
    return text


class WordsCore:
    name = "words"
    version = "0.1.0"
    features = CoreFeatures(abort=True)

    async def start(self, env: CoreEnvironment) -> None:
        self.island = AsyncioIsland(f"words-{env.session_id}")

    async def run(self, prompt: str, permission: PermissionCallback) -> AsyncIterator[CoreEvent]:
        sdk = functools.partial(asyncio_only_sdk, prompt)
        words = self.island.stream(sdk, may_wait=lambda _word: True)  # each is a part
        async with contextlib.aclosing(words):
            async for item in words:
                if not isinstance(item, Finished):
                    yield TextChunk(0, item)
                elif isinstance(item.error, asyncio.CancelledError):
                    yield Stopped("cancelled")
                elif item.error is not None:
                    raise CoreError(f"the SDK failed: {item.error}")
                else:
                    yield TextEnd(0, item.value or "")
                    yield Stopped("end_turn")

    async def cancel(self) -> None:
        self.island.cancel_jobs()

    async def close(self) -> None:
        await self.island.stop()
