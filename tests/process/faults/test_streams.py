"""Bad and heavy agent output: a 100 MB line, bytes that are not UTF-8 or not JSON, raw
line separators inside JSON strings, and a flood of deltas to a slow host."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import anyio
import psutil
import pytest
from rawp_adapter_process import ProcessAdapter

from rawp_adapters import ClientFrame, ControlFrame, SessionOptions, open_session
from rawp_adapters.frames import (
    AgentErrorFrame,
    InteractionRequestFrame,
    TextDeltaFrame,
    TurnEndFrame,
)
from rawp_adapters.testing import assert_valid_stream, drive
from tests.process.helpers import fake_adapter

pytestmark = pytest.mark.anyio

WAIT = 30.0
HUGE_LINE_MIB = 100
MAX_LINE_BYTES = 1024 * 1024
MEMORY_BOUND = 32 * 1024 * 1024
"""Far below the huge line: proof that the adapter never holds it."""
FLOOD = 20_000
BURST = 600


async def watch_peak_rss(peak: list[int], stop: anyio.Event) -> None:
    process = psutil.Process()
    while not stop.is_set():
        peak[0] = max(peak[0], process.memory_info().rss)
        with anyio.move_on_after(0.005):
            await stop.wait()


async def test_a_100_mb_line_is_skipped_as_too_large_and_the_session_goes_on(
    tmp_path: Path,
) -> None:
    adapter = fake_adapter(max_line_bytes=MAX_LINE_BYTES)
    baseline = psutil.Process().memory_info().rss
    peak = [baseline]
    stop = anyio.Event()
    async with drive(adapter, workspace=tmp_path) as driver, anyio.create_task_group() as tg:
        tg.start_soon(watch_peak_rss, peak, stop)
        huge = await driver.prompt(f"HUGE {HUGE_LINE_MIB}", timeout=WAIT)
        stop.set()
        after = await driver.prompt("and now?", timeout=WAIT)
    errors = huge.of_type(AgentErrorFrame)
    assert [(e.payload.severity, e.payload.error_code) for e in errors] == [
        ("error", "FRAME_TOO_LARGE")
    ]
    sizes = [int(number) for number in re.findall(r"\d+", errors[0].payload.message)]
    assert max(sizes) > HUGE_LINE_MIB * 1024 * 1024
    assert huge.text == "after the huge line"
    assert huge.stop_reason == "end_turn"
    assert after.text == "echo: and now?"
    assert peak[0] - baseline < MEMORY_BOUND


async def test_lines_that_are_not_json_events_are_skipped_and_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with drive(fake_adapter("--banner", "1"), workspace=tmp_path) as driver:
        record = await driver.prompt("BAD_BYTES", timeout=WAIT)
    deltas = [frame.payload.text for frame in record.of_type(TextDeltaFrame)]
    # Invalid UTF-8 inside a JSON string is replaced, not a reason to lose the event.
    assert deltas == ["bad:\ufffd\ufffd(:bytes", "still here"]
    assert record.stop_reason == "end_turn"
    assert driver.of_type(AgentErrorFrame) == []
    logged = "\n".join(r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING)
    for skipped in ("a banner, not JSON", "Loading plugins", "garbage that is not UTF-8"):
        assert skipped in logged


async def test_line_separators_inside_json_strings_arrive_intact(tmp_path: Path) -> None:
    async with drive(fake_adapter(), workspace=tmp_path) as driver:
        record = await driver.prompt("SEPARATORS", timeout=WAIT)
    deltas = [frame.payload.text for frame in record.of_type(TextDeltaFrame)]
    assert deltas == ["raw:\u2028:\u2029:end", "escaped:\u2028:\u2029:end"]


Transcript = list[ClientFrame | ControlFrame]


async def run_slow_host(
    adapter: ProcessAdapter, workspace: Path, text: str, *, every: int, pause: float
) -> Transcript:
    """Play a host that reads slowly (``pause`` seconds after every ``every`` frames),
    allows every interaction, runs the prompt ``text`` and ends the session; the transcript.

    Not drive(): its driver reads as fast as it can. A small frame buffer makes the
    adapter wait on this host.
    """
    transcript: Transcript = []
    options = SessionOptions(frame_buffer=32)
    with anyio.fail_after(WAIT):
        async with open_session(adapter, workspace=workspace, options=options) as session:
            prompt = session.control.prompt(text)
            transcript.append(prompt)
            await session.send(prompt)
            async for frame in session:
                transcript.append(frame)
                if isinstance(frame, InteractionRequestFrame):
                    allow = session.control.respond(frame.payload.interaction_id, "allow")
                    transcript.append(allow)
                    await session.send(allow)
                elif isinstance(frame, TurnEndFrame):
                    break
                if len(transcript) % every == 0:
                    await anyio.sleep(pause)  # a slow host, not a synchronisation
            await session.close()
            transcript.extend([frame async for frame in session])
    assert_valid_stream(transcript)
    return transcript


def texts(transcript: Transcript) -> list[str]:
    return [frame.payload.text for frame in transcript if isinstance(frame, TextDeltaFrame)]


async def test_a_flood_of_deltas_to_a_slow_host_keeps_order_and_the_dialog_flowing(
    tmp_path: Path,
) -> None:
    transcript = await run_slow_host(
        fake_adapter(), tmp_path, f"FLOOD {FLOOD}", every=100, pause=0.001
    )
    assert texts(transcript) == [f"d{i:05d} " for i in range(FLOOD)] + ["allowed=True"]
    requests = [frame for frame in transcript if isinstance(frame, InteractionRequestFrame)]
    assert len(requests) == 1


async def test_an_agent_that_crashes_after_a_burst_still_delivers_it_all_to_a_slow_host(
    tmp_path: Path,
) -> None:
    # The burst sits in the pipe when the agent dies; this host needs ~3 s to read it.
    transcript = await run_slow_host(
        fake_adapter(), tmp_path, f"EXIT 1 {BURST}", every=1, pause=0.005
    )
    assert texts(transcript) == [f"d{i:05d} " for i in range(BURST)]
    errors = [frame.payload for frame in transcript if isinstance(frame, AgentErrorFrame)]
    assert [(e.error_code, e.exit_code) for e in errors] == [("PROCESS_EXIT", 1)]


async def test_the_late_end_of_an_aborted_run_does_not_end_the_next_turn(tmp_path: Path) -> None:
    options = SessionOptions(abort_grace=0.3)
    adapter = fake_adapter("--terminal")
    async with drive(adapter, workspace=tmp_path, options=options) as driver:
        first = await driver.start_prompt("LATE_END")
        await driver.wait_for(TextDeltaFrame)
        await driver.send(driver.control.abort(first.payload.turn_id))
        aborted = await driver.wait_turn(first.payload.turn_id, timeout=WAIT)
        second = await driver.prompt("second", timeout=WAIT)
    assert aborted.stop_reason == "cancelled"
    assert second.text == "echo: second"
    assert second.stop_reason == "end_turn"
