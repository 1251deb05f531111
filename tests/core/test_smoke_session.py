from __future__ import annotations

from pathlib import Path

import pytest

from rawp_adapters.testing import FunctionAdapter, drive

pytestmark = pytest.mark.anyio


async def test_a_prompt_streams_text_between_turn_start_and_end(tmp_path: Path) -> None:
    async with drive(FunctionAdapter(), workspace=tmp_path) as d:
        turn = await d.prompt("hi")
        assert turn.text == "Hello"
        assert turn.stop_reason == "end_turn"
        closed = await d.end()
        assert closed.payload.reason == "explicit"
    assert [f.type for f in d.frames][:2] == ["session.capabilities", "agent.state.changed"]
