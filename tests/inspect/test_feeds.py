"""Feeds and replays without a server: the rules checked as frames arrive, a replay
stepped and played."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta

import anyio
import pytest

from rawp_adapters.inspect import _sources
from rawp_adapters.inspect._feed import Feed, Mark
from rawp_adapters.inspect._recordings import recording_lines
from rawp_adapters.inspect._sources import Replay, open_recording

pytestmark = pytest.mark.anyio


async def test_a_feed_marks_the_frame_that_breaks_a_rule_as_it_arrives(
    demo_lines: list[str],
) -> None:
    feed = Feed("f1", "session", "test")
    for line in demo_lines[:4]:
        feed.add(line, "agent")
    assert feed.marks == []
    feed.add(demo_lines[5], "agent")
    assert feed.marks == [Mark(4, "seq-contiguous", "seq 6, expected 5")]
    feed.end()
    assert [m.rule for m in feed.marks[1:]] == ["closed-last"]


async def test_a_feed_joined_mid_stream_is_not_judged(demo_lines: list[str]) -> None:
    feed = Feed("f1", "remote", "test", checked=False)
    for line in demo_lines[10:]:
        feed.add(line, "agent")
    feed.end()
    assert feed.marks == []


@pytest.mark.parametrize("check_here_max_lines", [2000, 0], ids=["on-the-loop", "elsewhere"])
async def test_an_opened_recording_is_checked_and_marked_where_it_breaks(
    demo_lines: list[str], monkeypatch: pytest.MonkeyPatch, check_here_max_lines: int
) -> None:
    monkeypatch.setattr(_sources, "CHECK_HERE_MAX_LINES", check_here_max_lines)
    feed = Feed("f1", "recording", "test")
    text = "\n".join(demo_lines[:7] + demo_lines[8:]) + "\n"
    with anyio.fail_after(60):
        await open_recording(feed, text)
    assert feed.state == "ended"
    assert len(feed.records) == len(demo_lines) - 1
    assert feed.marks == [Mark(7, "seq-contiguous", "seq 9, expected 8")]


async def test_a_replay_waits_paused_steps_a_frame_at_a_time_then_plays_to_the_end(
    demo_lines: list[str],
) -> None:
    feed = Feed("f2", "replay", "test")
    replay = Replay(feed, recording_lines("\n".join(demo_lines)))
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(replay.run)
            await anyio.wait_all_tasks_blocked()
            assert feed.records == []
            replay.step()
            await feed.wait_for_change()
            await anyio.wait_all_tasks_blocked()
            assert len(feed.records) == 1
            replay.step(2)
            while len(feed.records) < 3:
                await feed.wait_for_change()
            await anyio.wait_all_tasks_blocked()
            assert len(feed.records) == 3
            replay.play(math.inf)
            while feed.state != "ended":
                await feed.wait_for_change()
    assert [r.raw for r in feed.records] == demo_lines
    assert feed.marks == []


def paced(lines: list[str], gap: timedelta) -> list[str]:
    """The first frames of ``lines``, their timestamps ``gap`` apart."""
    start = datetime(2026, 1, 1, tzinfo=UTC)
    return [
        json.dumps({**json.loads(line), "timestamp": (start + gap * i).isoformat()})
        for i, line in enumerate(lines[:5])
    ]


async def replayed_in_s(lines: list[str], speed: float) -> float:
    feed = Feed("f3", "replay", "test")
    replay = Replay(feed, recording_lines("\n".join(lines)))
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(replay.run)
            started = anyio.current_time()
            replay.play(speed)
            while feed.state != "ended":
                await feed.wait_for_change()
    return anyio.current_time() - started


async def test_a_replay_at_ten_times_keeps_a_tenth_of_the_recorded_gaps(
    demo_lines: list[str],
) -> None:
    # Four gaps of 0.5 s: 0.2 s at x10 (2 s at x1).
    took = await replayed_in_s(paced(demo_lines, timedelta(seconds=0.5)), 10)
    assert 0.2 <= took < 1.9


async def test_a_replay_waits_at_most_two_seconds_for_a_long_idle_gap(
    demo_lines: list[str],
) -> None:
    # Four gaps of an hour at x1000: 3.6 s each as recorded, 2 ms each capped at 2 s.
    took = await replayed_in_s(paced(demo_lines, timedelta(hours=1)), 1000)
    assert took < 1.9
