"""The commands behind the argument parser: each turns plain options into a run.

What only one command needs (``run``'s terminal view, the frame schemas) is imported
when that command runs: ``serve --stdio`` is started once per session by a Master, and
pays for every import each time."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict
from functools import partial
from io import TextIOWrapper
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio

from rawp_adapters._adapter import Adapter
from rawp_adapters._registry import InstalledAdapter, installed_adapters
from rawp_adapters._session import SessionOptions
from rawp_adapters.cli._serve import serve_stdio
from rawp_adapters.cli._threads import daemon_worker
from rawp_adapters.host import Policy

if TYPE_CHECKING:
    from rawp_adapters.cli._listen import AdapterFactory

Backend = Literal["asyncio", "trio"]
Decisions = Literal["ask", "allow", "deny"]


# ------------------------------------------------------------------ adapters


def format_adapters(adapters: list[InstalledAdapter]) -> str:
    """A table of installed adapters, or a sentence saying there are none."""
    if not adapters:
        return (
            "No adapters are installed. Adapters register in the entry-point group\n"
            "'rawp_adapters.adapters'; install one, e.g. rawp-adapter-sdk.\n"
        )
    rows = [("ADAPTER", "PROTOCOL", "DISTRIBUTION", "VERSION", "TARGET")] + [
        (a.adapter_type, a.protocol or "-", a.distribution or "-", a.version or "-", a.target)
        for a in adapters
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return "".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row[:4], widths, strict=True))
        + "  "
        + row[4]
        + "\n"
        for row in rows
    )


def adapters_command(*, as_json: bool) -> int:
    adapters = installed_adapters()
    if as_json:
        _write_text(json.dumps([asdict(a) for a in adapters], indent=2) + "\n")
    else:
        _write_text(format_adapters(adapters))
    return 0


# ------------------------------------------------------------------ schema


def schema_command(
    *, frame_type: str | None, markdown: bool, export: Path | None, output: Path | None
) -> int:
    from rawp_adapters._schema import export_schemas, frame_schema, frames_markdown, render_json

    if export is not None:
        written = export_schemas(export)
        sys.stderr.write(f"wrote {len(written)} schema files to {export}\n")
        return 0
    text = frames_markdown() if markdown else render_json(frame_schema(frame_type))
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_bytes(text.encode())
    else:
        _write_text(text)
    return 0


def _write_text(text: str) -> None:
    """UTF-8 whatever the console's encoding, and ``\\n`` line ends on every OS."""
    sys.stdout.flush()
    sys.stdout.buffer.write(text.encode())
    sys.stdout.buffer.flush()


# ------------------------------------------------------------------ run


def run_command(
    adapter: Adapter,
    *,
    prompt: str,
    workspace: Path,
    jsonl: bool,
    decisions: Decisions,
    permission_timeout: float,
    backend: Backend,
) -> int:
    from rawp_adapters.cli._answers import FixedAnswers, TerminalAnswers
    from rawp_adapters.cli._prompt import AnswerReader
    from rawp_adapters.cli._render import (
        YELLOW,
        Console,
        FrameView,
        JsonlView,
        TerminalView,
        is_terminal,
    )
    from rawp_adapters.cli._run import run_prompt

    if isinstance(sys.stdout, TextIOWrapper):
        sys.stdout.reconfigure(errors="backslashreplace")
    console = Console.for_stream(sys.stderr if jsonl else sys.stdout)
    view: FrameView = JsonlView(sys.stdout.buffer) if jsonl else TerminalView(console)

    for notice in adapter.notices:
        console.line(f"note: {notice}", YELLOW)

    async def main() -> int:
        async with daemon_worker("rawp-stdin") as worker:
            policy: Policy
            if decisions == "ask":
                policy = TerminalAnswers(
                    console,
                    AnswerReader(sys.stdin, worker),
                    limit=permission_timeout,
                    live=is_terminal(sys.stdin) and is_terminal(console.out),
                )
            else:
                policy = FixedAnswers(console, allow=decisions == "allow")
            return await run_prompt(
                adapter,
                prompt,
                workspace=workspace,
                show=view.show,
                policy=policy,
                notify=lambda text: console.line(text, YELLOW),
            )

    return anyio.run(main, backend=backend)


# ------------------------------------------------------------------ serve


def serve_command(
    adapter: Adapter,
    *,
    workspace: Path,
    max_line_bytes: int,
    host_tool_timeout_ms: int,
    backend: Backend,
) -> int:
    frames_fd = _take_stdout()
    serve = partial(
        serve_stdio,
        adapter,
        workspace=workspace,
        stdin_fd=sys.stdin.fileno(),
        stdout_fd=frames_fd,
        max_line_bytes=max_line_bytes,
        options=SessionOptions(host_tool_timeout_ms=host_tool_timeout_ms),
    )
    return anyio.run(serve, backend=backend)


def listen_command(
    make_adapter: AdapterFactory,
    *,
    path: Path,
    workspace: Path,
    max_line_bytes: int,
    host_tool_timeout_ms: int,
    backend: Backend,
) -> int:
    from rawp_adapters.cli._listen import serve_listening, take_socket_path

    refused = take_socket_path(path)
    if refused is not None:
        sys.stderr.write(f"rawp-adapters: {refused}\n")
        return 2
    serve = partial(
        serve_listening,
        make_adapter,
        path=path,
        root=workspace,
        max_line_bytes=max_line_bytes,
        options=SessionOptions(host_tool_timeout_ms=host_tool_timeout_ms),
        announce=_announce,
    )
    return anyio.run(serve, backend=backend)


def _announce(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _take_stdout() -> int:
    """A private copy of stdout for frames; file descriptor 1 then points at stderr, so
    a stray print (an SDK, a library, a child process) cannot break the frame stream."""
    sys.stdout.flush()
    frames_fd = os.dup(1)
    os.dup2(2, 1)
    return frames_fd


def parse_settings(pairs: list[str], settings_json: str | None) -> dict[str, Any]:
    """``--settings-json`` first, then each ``--setting KEY=VALUE`` on top. A VALUE
    that parses as JSON is taken as JSON (``5``, ``true``, ``{"a": 1}``), anything
    else as a string. Raises ``ValueError`` with a message for the user."""
    settings: dict[str, Any] = {}
    if settings_json is not None:
        try:
            loaded = json.loads(settings_json)
        except ValueError as exc:
            raise ValueError(f"--settings-json is not JSON: {exc}") from None
        if not isinstance(loaded, dict):
            raise ValueError("--settings-json must be a JSON object")
        settings.update(loaded)
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--setting needs KEY=VALUE, got {pair!r}")
        try:
            settings[key] = json.loads(value)
        except ValueError:
            settings[key] = value
    return settings
