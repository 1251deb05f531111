"""Running ``rawp-adapters`` as a real subprocess, with a test adapter installed for
that subprocess only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import Process

from rawp_adapters import LineFramer

REPO_ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "rawp_adapters.cli"]
WAIT = 30.0


@pytest.fixture(scope="session")
def plugin_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """An environment in which the ``scripted-cli`` adapter is installed: a
    ``.dist-info`` on PYTHONPATH, found by importlib.metadata like any distribution."""
    site = tmp_path_factory.mktemp("plugin-site")
    info = site / "rawp_cli_test_plugin-1.2.3.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: rawp-cli-test-plugin\nVersion: 1.2.3\n"
    )
    (info / "entry_points.txt").write_text(
        "[rawp_adapters.adapters]\nscripted-cli = tests.cli.agents:PluginAdapter\n"
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(site), str(REPO_ROOT), env.get("PYTHONPATH")) if p
    )
    return env


def run_cli(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None, input: bytes = b""
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*CLI, *args], input=input, capture_output=True, env=env, cwd=cwd, timeout=WAIT * 2
    )


def frames_of(stdout: bytes) -> list[dict[str, Any]]:
    """Every stdout line as JSON; fails on a line that is not."""
    return [json.loads(line) for line in stdout.splitlines()]


class Bridge:
    """The Master's end of ``rawp-adapters serve --stdio``."""

    def __init__(self, process: Process) -> None:
        self.process = process
        self.frames: list[dict[str, Any]] = []
        self._framer = LineFramer()
        self._lines: deque[bytes] = deque()

    @property
    def session_id(self) -> str:
        session_id: str = self.frames[0]["session_id"]
        return session_id

    async def write(self, data: bytes) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send(data)

    async def send(self, frame_type: str, payload: dict[str, Any], seq: int) -> None:
        frame = {
            "type": frame_type,
            "session_id": self.session_id,
            "seq": seq,
            "timestamp": "2026-01-01T00:00:00.000Z",
            "payload": payload,
        }
        await self.write(json.dumps(frame).encode() + b"\n")

    async def close_stdin(self) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.aclose()

    async def next_frame(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        with anyio.fail_after(WAIT):
            while not self._lines:
                try:
                    chunk = await self.process.stdout.receive()
                except anyio.EndOfStream:
                    raise AssertionError("stdout ended before the next frame") from None
                for line in self._framer.feed(chunk):
                    assert isinstance(line, bytes), "the bridge wrote an oversized line"
                    self._lines.append(line)
        frame: dict[str, Any] = json.loads(self._lines.popleft())
        self.frames.append(frame)
        return frame

    async def until(self, frame_type: str, **payload: Any) -> dict[str, Any]:
        """Read frames up to the first of ``frame_type`` whose payload has these values."""
        while True:
            frame = await self.next_frame()
            if frame["type"] == frame_type and all(
                frame["payload"].get(k) == v for k, v in payload.items()
            ):
                return frame

    async def rest(self) -> list[dict[str, Any]]:
        """Every frame up to the end of stdout, which must come after session.closed."""
        assert self.process.stdout is not None
        with anyio.fail_after(WAIT):
            async for chunk in self.process.stdout:
                for line in self._framer.feed(chunk):
                    assert isinstance(line, bytes)
                    self._lines.append(line)
        while self._lines:
            self.frames.append(json.loads(self._lines.popleft()))
        return self.frames

    async def exit_code(self) -> int:
        with anyio.fail_after(WAIT):
            return await self.process.wait()


@asynccontextmanager
async def serve(
    *args: str, env: dict[str, str] | None, cwd: Path, stderr: Path, cli: list[str] = CLI
) -> AsyncIterator[Bridge]:
    """``rawp-adapters serve --stdio ARGS`` with its stderr in a file; killed if still
    running when the block ends."""
    with stderr.open("wb") as err:
        process = await anyio.open_process(
            [*cli, "serve", "--stdio", *args], env=env, cwd=cwd, stderr=err
        )
        async with process:
            try:
                yield Bridge(process)
            finally:
                if process.returncode is None:
                    process.kill()
                    with anyio.CancelScope(shield=True):
                        await process.wait()
