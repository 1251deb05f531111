"""The inspector as a user meets it: ``rawp-adapters inspect`` as a real process, and
(for the page) Debian's Chromium driven headless by Playwright."""

from __future__ import annotations

import http.client
import json
import selectors
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Browser, Page

from tests.inspect.browser import launch, open_page
from tests.inspect.recordings import CLI, record_demo_session

START_WAIT = 30.0


@dataclass(frozen=True)
class Server:
    url: str
    """The URL the command printed, with its token."""
    base: str
    token: str
    workspace: Path
    process: subprocess.Popen[bytes]


@contextmanager
def inspector(
    workspace: Path, *args: str, env: Mapping[str, str] | None = None
) -> Iterator[Server]:
    """``rawp-adapters inspect`` started in ``workspace`` (in ``env``, if given), stopped
    (SIGTERM, then SIGKILL) on exit."""
    with (workspace / "inspector.stderr").open("wb") as stderr:
        process = subprocess.Popen(
            [*CLI, "inspect", *args],
            cwd=workspace,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=env,
        )
        try:
            assert process.stdout is not None
            with selectors.DefaultSelector() as selector:
                selector.register(process.stdout, selectors.EVENT_READ)
                ready = selector.select(timeout=START_WAIT)
            assert ready, "rawp-adapters inspect printed no URL in time"
            line = process.stdout.readline().decode()
            url = line.split()[-1]
            parts = urlsplit(url)
            token = parse_qs(parts.query)["token"][0]
            yield Server(url, f"{parts.scheme}://{parts.netloc}", token, workspace, process)
        finally:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with inspector(tmp_path_factory.mktemp("inspect")) as running:
        yield running


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """One headless Chromium per test module."""
    yield from launch()


@pytest.fixture
def page(browser: Browser, server: Server) -> Iterator[Page]:
    """The inspector's page in a fresh browser context; no script may fail in it."""
    for page, errors in open_page(browser, server.url):
        yield page
        assert errors.errors == []


@pytest.fixture(scope="module")
def demo_lines(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """A real demo-core session's frames (one allowed write)."""
    return record_demo_session(tmp_path_factory.mktemp("demo"))


def fetch(
    server: Server, path: str, *, token: str | None = None, body: Any = None
) -> tuple[int, dict[str, str], bytes]:
    headers = {"content-type": "application/json"}
    if token is not None:
        headers["x-inspector-token"] = token
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(server.base + path, data=data, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


class Frames:
    """A feed's frames as a page reads them: server-sent events, the first data line of
    each about the batch (the feed's summary among it), every further one a frame."""

    def __init__(self, server: Server, feed_id: str) -> None:
        where = urlsplit(server.base)
        assert where.hostname is not None
        self.connection = http.client.HTTPConnection(where.hostname, where.port, timeout=30)
        self.connection.request("GET", f"/api/feeds/{feed_id}/events?token={server.token}")
        self.response = self.connection.getresponse()
        assert self.response.status == 200
        self.feed: dict[str, Any] = {}
        """The feed's summary as of the last event read."""

    def _frames(self) -> Iterator[dict[str, Any]]:
        while line := self.response.readline():
            if line.startswith(b'data: {"n0"'):
                self.feed = json.loads(line.removeprefix(b"data: "))["feed"]
            elif line.startswith(b"data: "):
                yield json.loads(line.removeprefix(b"data: "))

    def next(self) -> dict[str, Any]:
        return next(self._frames())

    def until(self, frame_type: str) -> dict[str, Any]:
        for frame in self._frames():
            if frame["type"] == frame_type:
                return frame
        raise AssertionError(f"the feed ended before {frame_type}")

    def ended(self) -> dict[str, Any]:
        """The feed's summary once it has ended (the stream then closes)."""
        for _ in self._frames():
            pass
        assert self.feed.get("state") == "ended", self.feed
        return self.feed
