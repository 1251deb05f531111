"""The bridge between the ACP SDK's loop and the session's: what the SDK side posts
once the session has stopped reading (an agent's exit seen while its session ends) is
dropped, never an error in the session's task group."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

import anyio
import pytest
from rawp_adapter_acp._bridge import Bridge

pytestmark = pytest.mark.anyio


async def test_an_item_posted_after_the_bridge_closed_is_dropped() -> None:
    async with anyio.create_task_group() as tg:

        def start_soon(func: Callable[[], Coroutine[Any, Any, object]]) -> None:
            tg.start_soon(func)

        bridge = Bridge.for_current_loop(start_soon)
        await bridge.open()
        bridge.post("before")
        await bridge.aclose()
        bridge.post("the agent exited")
        bridge.post_here("after")
    assert [item async for item in bridge.items] == ["before"]
