"""A hostile or buggy Master, or an agent that writes text UTF-8 cannot carry, never
ends ``serve --stdio`` without its closing frames; stop signals end it like end of
stdin."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from rawp_adapters.testing import assert_valid_stream
from tests.cli.conftest import serve

pytestmark = pytest.mark.anyio


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
