"""A 100,000-frame recording in the page: opened, scrolled and searched."""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

from playwright.sync_api import Page, expect

from tests.inspect.browser import screenshot
from tests.inspect.recordings import long_recording

FRAMES = 100_000
OPEN_BOUND_MS = 60_000
"""Far above what it takes (about 6 s on a loaded 2-core machine): a bound that only
a page that renders every row, or a server that blocks on checking, would break."""


def test_a_100000_frame_recording_opens_in_seconds_and_scrolls_to_its_last_frame(
    page: Page, tmp_path: Path, demo_lines: list[str]
) -> None:
    lines = long_recording(demo_lines, FRAMES)
    big = tmp_path / "big.jsonl"
    big.write_text("\n".join(lines) + "\n")
    started = time.monotonic()
    page.set_input_files("#open-file", big)
    timing = page.locator("#open-timing")
    expect(timing).to_have_attribute("data-ms", re.compile(r"^\d+$"), timeout=OPEN_BOUND_MS)
    drawn_s = time.monotonic() - started
    opened_ms = int(timing.get_attribute("data-ms") or 0)
    assert opened_ms < OPEN_BOUND_MS
    # The timeline (the view open at first) is drawn at its end, and only the rows in
    # view are in the page, whatever the feed's length.
    timeline = page.locator("#timeline .row-item")
    assert 0 < timeline.count() < 100
    expect(timeline.last).to_have_attribute("data-kind", "closed")
    page.click("#tab-raw")
    assert page.locator("#raw .row-item").count() < 100
    expect(page.locator("#raw .row-item").last).to_contain_text(f"#{len(lines)}")
    raw_s = time.monotonic() - started
    status = page.locator("#feed-status")
    expect(status).to_have_text(
        f"recording · ended · {len(lines)} frames · 0 rules broken", timeout=OPEN_BOUND_MS
    )
    sys.stderr.write(
        f"{len(lines)} frames: drawn {opened_ms} ms after the file was chosen (the page's"
        f" clock), {drawn_s:.1f} s (the test's); the raw view at the last frame after"
        f" {raw_s:.1f} s; every rule checked after {time.monotonic() - started:.1f} s\n"
    )
    page.fill("#search", "session.closed")
    expect(page.locator("#raw .row-item")).to_have_count(1)
    expect(page.locator("#raw .row-item")).to_contain_text(f"#{len(lines)}")
    page.fill("#search", "")
    page.click("#tab-timeline")
    screenshot(page, "large")
