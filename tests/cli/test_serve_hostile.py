"""A hostile or buggy Master, or an agent that writes text UTF-8 cannot carry, never
ends ``serve --stdio`` without its closing frames; stop signals end it like end of
stdin."""

from __future__ import annotations

import json
import re
import signal
from pathlib import Path

import anyio
import pytest

from rawp_adapters.testing import assert_valid_stream
from tests.cli.conftest import Bridge, serve

pytestmark = pytest.mark.anyio

BAD_LINES = 30_000
SUMMARY = re.compile(r"^(\d+) more control frames were refused without an answer each")


def control_line(session_id: str, text: str) -> bytes:
    frame = {
        "type": "control.prompt.request",
        "session_id": session_id,
        "seq": 1,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "payload": {"prompt_id": "p1", "text": "PLACEHOLDER"},
    }
    return json.dumps(frame).replace("PLACEHOLDER", text).encode() + b"\n"


async def test_deep_nesting_and_lone_surrogates_from_the_master_are_answered(
    tmp_path: Path, plugin_env: dict[str, str]
) -> None:
    args = ("--adapter", "scripted-cli", "--workspace", str(tmp_path))
    async with serve(*args, env=plugin_env, cwd=tmp_path, stderr=tmp_path / "err") as bridge:
        await bridge.until("agent.state.changed", state="idle")
        sid = bridge.session_id
        await bridge.write(b"[" * 100_000 + b"\n")
        await bridge.write(control_line(sid, "caf\\udc00"))
        await bridge.write(control_line(sid, "hi").replace(sid.encode(), b"\\udc00"))
        await bridge.write(
            control_line(sid, "hi").replace(b'"type"', b'"version": "rawp-dps-9.9", "type"')
        )
        errors = [await bridge.until("session.error") for _ in range(4)]
        assert [e["payload"]["error_code"] for e in errors] == [
            "INVALID_FRAME",
            "INVALID_FRAME",
            "INVALID_FRAME",
            "UNSUPPORTED_VERSION",
        ]
        assert "nested deeper" in errors[0]["payload"]["message"]
        assert "surrogate" in errors[1]["payload"]["message"]
        await bridge.send("control.prompt.request", {"prompt_id": "p2", "text": "hi"}, seq=5)
        end = await bridge.until("session.turn.end")
        assert end["payload"]["stop_reason"] == "end_turn"
        await bridge.close_stdin()
        frames = await bridge.rest()
        assert await bridge.exit_code() == 0
    assert frames[-1]["type"] == "session.closed"
    assert [f["seq"] for f in frames] == list(range(1, len(frames) + 1))
    assert_valid_stream(frames)


async def test_agent_text_with_a_lone_surrogate_reaches_the_master_replaced(
    tmp_path: Path, plugin_env: dict[str, str]
) -> None:
    args = ("--adapter", "scripted-cli", "--setting", "script=surrogate")
    async with serve(
        *args, "--workspace", str(tmp_path), env=plugin_env, cwd=tmp_path, stderr=tmp_path / "e"
    ) as bridge:
        await bridge.until("agent.state.changed", state="idle")
        await bridge.send("control.prompt.request", {"prompt_id": "p1", "text": "go"}, seq=1)
        delta = await bridge.until("agent.text.delta")
        assert delta["payload"]["text"] == "bad \ufffd text"
        end = await bridge.until("session.turn.end")
        assert end["payload"]["stop_reason"] == "end_turn"
        await bridge.close_stdin()
        frames = await bridge.rest()
        assert await bridge.exit_code() == 0
    assert [f["seq"] for f in frames] == list(range(1, len(frames) + 1))
    assert_valid_stream(frames)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
async def test_a_stop_signal_mid_turn_ends_the_session_with_its_closing_frames(
    tmp_path: Path, plugin_env: dict[str, str], signum: signal.Signals
) -> None:
    args = ("--adapter", "scripted-cli", "--setting", "script=wait_for_abort")
    async with serve(
        *args, "--workspace", str(tmp_path), env=plugin_env, cwd=tmp_path, stderr=tmp_path / "e"
    ) as bridge:
        await bridge.until("agent.state.changed", state="idle")
        await bridge.send("control.prompt.request", {"prompt_id": "p1", "text": "go"}, seq=1)
        await bridge.until("agent.text.delta")
        bridge.process.send_signal(signum)
        frames = await bridge.rest()
        assert await bridge.exit_code() == 128 + signum
    types = [f["type"] for f in frames]
    assert types[-1] == "session.closed"
    end = next(f for f in frames if f["type"] == "session.turn.end")
    assert end["payload"]["stop_reason"] == "cancelled"
    assert frames[-1]["payload"]["reason"] == "explicit"
    assert_valid_stream(frames)


@pytest.mark.parametrize("reading", ["all along", "after the last line"])
async def test_every_bad_line_is_answered_or_summed_up_once_the_bridge_caught_up(
    tmp_path: Path, plugin_env: dict[str, str], reading: str
) -> None:
    args = ("--adapter", "scripted-cli", "--workspace", str(tmp_path))
    lines = [f"not json {n}\n".encode() for n in range(BAD_LINES)]
    async with serve(*args, env=plugin_env, cwd=tmp_path, stderr=tmp_path / "err") as bridge:
        await bridge.until("agent.state.changed", state="idle")
        if reading == "all along":
            async with anyio.create_task_group() as tg:
                tg.start_soon(_write_in_chunks, bridge, lines)
                answered, summaries = await _account_for(bridge, BAD_LINES)
        else:
            await _write_in_chunks(bridge, lines)
            answered, summaries = await _account_for(bridge, BAD_LINES)
        # stdin is still open and idle: every bad line was accounted for before its end
        await bridge.close_stdin()
        frames = await bridge.rest()
        assert await bridge.exit_code() == 0
    assert answered + sum(summaries) == BAD_LINES
    if reading == "after the last line":
        assert summaries
    errors = [f for f in frames if f["type"] == "session.error"]
    assert len(errors) == answered + len(summaries)
    assert not any("not reading" in e["payload"]["message"] for e in errors)
    assert frames[-1]["type"] == "session.closed"
    assert_valid_stream(frames)


async def _write_in_chunks(bridge: Bridge, lines: list[bytes]) -> None:
    for start in range(0, len(lines), 1_000):
        await bridge.write(b"".join(lines[start : start + 1_000]))


async def _account_for(bridge: Bridge, bad_lines: int) -> tuple[int, list[int]]:
    """Read until the answers and summaries cover ``bad_lines``: how many were answered
    one by one, and the count of each summary."""
    answered = 0
    summaries: list[int] = []
    while answered + sum(summaries) < bad_lines:
        error = await bridge.until("session.error", error_code="INVALID_FRAME")
        if match := SUMMARY.match(error["payload"]["message"]):
            summaries.append(int(match.group(1)))
        else:
            answered += 1
    return answered, summaries
