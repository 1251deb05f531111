"""Headless Chromium for the page's tests: Debian's package, driven by Playwright
through its executable path (``playwright install`` downloads a browser build, which
cannot work here; scripts/install-browser installs Chromium)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import (
    Browser,
    ConsoleMessage,
    Page,
    Request,
    expect,
    sync_playwright,
)

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
WAIT_MS = 30_000
SCREENSHOTS = os.environ.get("RAWP_INSPECTOR_SCREENSHOTS")
"""A directory to save the main views into (docs/images for the docs), if set."""


REQUIRED = "RAWP_REQUIRE_BROWSER"
"""Set to 1 by .ci/run: in CI a missing browser fails the page's tests (a skipped one
proves nothing) instead of skipping them."""


def launch() -> Iterator[Browser]:
    expect.set_options(timeout=WAIT_MS)
    if not CHROMIUM.exists():
        missing = "Debian's chromium is not installed: run scripts/install-browser"
        if os.environ.get(REQUIRED) == "1":
            pytest.fail(f"{missing} ({REQUIRED}=1)", pytrace=False)
        pytest.skip(missing)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield browser
        browser.close()


class PageErrors:
    """Scripts that failed in the page, what the content security policy refused, and
    any request for something not on the inspector's own server (``origin``)."""

    def __init__(self, page: Page, origin: str) -> None:
        self.errors: list[str] = []
        self.origin = origin
        page.on("pageerror", lambda error: self.errors.append(str(error)))
        page.on("console", self._console)
        page.on("request", self._request)

    def _request(self, request: Request) -> None:
        if not request.url.startswith((self.origin + "/", "data:")):
            self.errors.append(f"a request off the inspector's server: {request.url}")

    def _console(self, message: ConsoleMessage) -> None:
        if message.type == "error" and "Content Security Policy" in message.text:
            self.errors.append(message.text)


def open_page(browser: Browser, url: str) -> Iterator[tuple[Page, PageErrors]]:
    context = browser.new_context(viewport={"width": 1280, "height": 760}, accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    parts = urlsplit(url)
    errors = PageErrors(page, f"{parts.scheme}://{parts.netloc}")
    page.goto(url)
    yield page, errors
    context.close()


def screenshot(page: Page, name: str) -> None:
    """The page as it is, into ``$RAWP_INSPECTOR_SCREENSHOTS`` (a size that keeps the
    PNG small for the docs)."""
    if SCREENSHOTS:
        expect(page.locator("#start-button")).to_be_enabled()
        page.set_viewport_size({"width": 1024, "height": 540})
        page.evaluate("() => new Promise(requestAnimationFrame)")
        page.screenshot(path=str(Path(SCREENSHOTS) / f"inspector-{name}.png"))
