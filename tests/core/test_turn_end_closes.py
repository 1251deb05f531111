"""What a turn leaves open, the session runtime closes before the turn's end, for
every adapter: text and thinking blocks (with the text so far), tool calls, and the
turn's usage, summed into one ``session.usage``."""

from __future__ import annotations

from pathlib import Path

import pytest

from rawp_adapters import SessionContext, SessionOptions, Turn, TurnResult
from rawp_adapters.frames import (
    SessionUsage,
    SessionUsageFrame,
    TextDelta,
    TextDoneFrame,
    ThinkingDelta,
    ThinkingDoneFrame,
    ToolInvokeRequest,
    ToolInvokeResultFrame,
    TurnEndFrame,
)
from rawp_adapters.testing import FunctionAdapter, drive, stall

pytestmark = pytest.mark.anyio


async def start_two_blocks_and_a_tool(turn: Turn, ctx: SessionContext) -> TurnResult:
    tid = turn.turn_id
    await ctx.emit(ThinkingDelta(turn_id=tid, index=0, text="secret", redacted=True))
    await ctx.emit(TextDelta(turn_id=tid, index=1, text="tick "))
    await ctx.emit(TextDelta(turn_id=tid, index=1, text="tock"))
    await ctx.emit(ToolInvokeRequest(invocation_id="c1", tool_name="bash", input={}, turn_id=tid))
    await stall()(turn, ctx)
    return TurnResult()


async def test_an_aborted_turn_has_its_open_blocks_closed_with_the_text_so_far(
    tmp_path: Path,
) -> None:
    adapter = FunctionAdapter(start_two_blocks_and_a_tool, abort="cancel")
    async with drive(adapter, workspace=tmp_path) as d:
        start = await d.start_prompt("go")
        await d.wait_for("tool.invoke.request")
        await d.send(d.control.abort())
        turn = await d.wait_turn(start.payload.turn_id)
    assert turn.stop_reason == "cancelled"
    text_done = turn.of_type(TextDoneFrame)
    assert [(f.payload.index, f.payload.text) for f in text_done] == [(1, "tick tock")]
    thinking_done = turn.of_type(ThinkingDoneFrame)
    assert [(f.payload.index, f.payload.redacted) for f in thinking_done] == [(0, True)]
    result = turn.of_type(ToolInvokeResultFrame)
    assert [(f.payload.invocation_id, f.payload.is_error) for f in result] == [("c1", True)]
    end = turn.end
    assert max(f.seq for f in [*text_done, *thinking_done, *result]) < end.seq


async def test_a_cancelled_turn_of_an_agent_that_reports_no_usage_still_gets_its_one_usage(
    tmp_path: Path,
) -> None:
    adapter = FunctionAdapter(start_two_blocks_and_a_tool, abort="cancel")
    async with drive(adapter, workspace=tmp_path) as d:
        start = await d.start_prompt("go")
        await d.wait_for("tool.invoke.request")
        await d.send(d.control.abort())
        turn = await d.wait_turn(start.payload.turn_id)
    (usage,) = turn.of_type(SessionUsageFrame)
    counts = usage.payload.model_dump(exclude={"turn_id"}, exclude_none=True)
    assert (usage.payload.turn_id, counts) == (start.payload.turn_id, {})
    assert usage.seq < turn.end.seq


async def report_two_steps(turn: Turn, ctx: SessionContext) -> TurnResult:
    for step in ((100, 5), (120, 7)):
        await ctx.emit(
            SessionUsage(
                turn_id=turn.turn_id, input_tokens=step[0], output_tokens=step[1], cost_usd=0.25
            )
        )
    return TurnResult()


async def test_a_turn_gets_one_usage_frame_the_sum_of_its_steps(tmp_path: Path) -> None:
    async with drive(FunctionAdapter(report_two_steps), workspace=tmp_path) as d:
        turn = await d.prompt("go")
    usage = turn.of_type(SessionUsageFrame)
    assert len(usage) == 1
    total = usage[0].payload
    assert (total.input_tokens, total.output_tokens, total.cost_usd) == (220, 12, 0.5)
    end = turn.end
    assert isinstance(end, TurnEndFrame)
    assert end.payload.usage is not None
    assert end.payload.usage.input_tokens == 220
    assert usage[0].seq < end.seq


async def test_a_master_that_asks_for_steps_gets_them_marked_and_the_sum_once(
    tmp_path: Path,
) -> None:
    options = SessionOptions(usage_steps=True)
    async with drive(FunctionAdapter(report_two_steps), workspace=tmp_path, options=options) as d:
        turn = await d.prompt("go")
    usage = turn.of_type(SessionUsageFrame)
    scopes = [
        (f.metadata.model_extra or {}).get("usage_scope") if f.metadata else None for f in usage
    ]
    assert scopes == ["step", "step", None]
    assert usage[-1].payload.input_tokens == 220
