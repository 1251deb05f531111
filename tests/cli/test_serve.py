"""``rawp-adapters serve --stdio`` as a real subprocess, played by a Master."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pytest

from rawp_adapters.testing import assert_valid_stream
from tests.cli.agents import FLOOD, NOTES
from tests.cli.conftest import CLI, WAIT, run_cli, serve

pytestmark = pytest.mark.anyio


async def test_a_master_runs_a_prompt_and_answers_a_permission_request(
    tmp_path: Path, plugin_env: dict[str, str]
) -> None:
    args = ("--adapter", "scripted-cli", "--setting", "script=ask", "--workspace", str(tmp_path))
    async with serve(*args, env=plugin_env, cwd=tmp_path, stderr=tmp_path / "err") as bridge:
        capabilities = await bridge.next_frame()
        assert capabilities["type"] == "session.capabilities"
        assert capabilities["payload"]["adapter_type"] == "scripted-cli"
        await bridge.send("control.prompt.request", {"prompt_id": "p1", "text": "go"}, seq=1)
        request = await bridge.until("agent.interaction.request")
        assert request["payload"]["context"]["tool_name"] == "write_file"
        interaction_id = request["payload"]["interaction_id"]
        await bridge.send(
            "control.interaction.response",
            {"interaction_id": interaction_id, "decision": "allow"},
            seq=2,
        )
        result = await bridge.until("tool.invoke.result")
        assert result["payload"]["output"] == "wrote notes.txt"
        end = await bridge.until("session.turn.end")
        assert end["payload"]["stop_reason"] == "end_turn"
        await bridge.close_stdin()
        frames = await bridge.rest()
        assert await bridge.exit_code() == 0
    assert (tmp_path / NOTES).read_text() == "hi"
    assert frames[-1]["type"] == "session.closed"
    assert frames[-1]["payload"]["reason"] == "explicit"
    assert [f["seq"] for f in frames] == list(range(1, len(frames) + 1))
    assert_valid_stream(frames)


BAD_LINES = [
    (b"this is not json", "not JSON"),
    (b"[1, 2, 3]", "must be a JSON object"),
    (b'{"payload": {}}', "needs a string 'type'"),
    (
        b'{"type": "control.prompt.request", "session_id": "s", "seq": 1, "timestamp": "t"}',
        "payload",
    ),
    (
        b'{"type": "agent.text.delta", "session_id": "s", "seq": 1, "timestamp": "t",'
        b' "payload": {"turn_id": "t", "index": 0, "text": "x"}}',
        "goes from Client to Master",
    ),
    (b'{"type": "control.session.end", "text": "caf\xc3"}', "not JSON"),
    (b"x" * 5000, "over the size limit"),
]


async def test_bad_input_of_every_kind_gets_invalid_frame_and_nothing_is_lost(
    tmp_path: Path, plugin_env: dict[str, str]
) -> None:
    args = ("--adapter", "scripted-cli", "--max-line-bytes", "4096", "--workspace", str(tmp_path))
    async with serve(*args, env=plugin_env, cwd=tmp_path, stderr=tmp_path / "err") as bridge:
        await bridge.until("agent.state.changed", state="idle")
        await bridge.write(b"".join(line + b"\n" for line, _ in BAD_LINES))
        unknown = {"type": "control.future.thing", "session_id": bridge.session_id, "seq": 1}
        await bridge.write(
            json.dumps({**unknown, "timestamp": "t", "payload": {}}).encode() + b"\n"
        )
        errors = [await bridge.until("session.error") for _ in BAD_LINES]
        await bridge.send("control.prompt.request", {"prompt_id": "p1", "text": "hi"}, seq=1)
        end = await bridge.until("session.turn.end")
        await bridge.close_stdin()
        frames = await bridge.rest()
        assert await bridge.exit_code() == 0
    for error, (_, expected) in zip(errors, BAD_LINES, strict=True):
        assert error["payload"]["error_code"] == "INVALID_FRAME"
        assert error["payload"]["fatal"] is False
        assert expected in error["payload"]["message"]
    # An unknown control type is skipped, not an error; nothing else was refused.
    assert sum(f["type"] == "session.error" for f in frames) == len(BAD_LINES)
    assert end["payload"]["stop_reason"] == "end_turn"
    said = "".join(f["payload"]["text"] for f in frames if f["type"] == "agent.text.delta")
    assert said == "Hello"
    assert_valid_stream(frames)


async def test_a_last_line_without_a_newline_is_still_read_at_end_of_input(
    tmp_path: Path, plugin_env: dict[str, str]
) -> None:
    args = ("--adapter", "scripted-cli", "--workspace", str(tmp_path))
    async with serve(*args, env=plugin_env, cwd=tmp_path, stderr=tmp_path / "err") as bridge:
        await bridge.next_frame()
        abort = {"type": "control.prompt.abort", "session_id": bridge.session_id, "seq": 1}
        await bridge.write(json.dumps({**abort, "timestamp": "t", "payload": {}}).encode())
        await bridge.close_stdin()
        frames = await bridge.rest()
        assert await bridge.exit_code() == 0
    codes = [f["payload"]["error_code"] for f in frames if f["type"] == "session.error"]
    assert codes == ["NO_ACTIVE_TURN"]
    assert frames[-1]["type"] == "session.closed"


async def test_session_end_from_the_master_exits_while_stdin_is_still_open(
    tmp_path: Path, plugin_env: dict[str, str]
) -> None:
    args = ("--adapter", "scripted-cli", "--workspace", str(tmp_path))
    async with serve(*args, env=plugin_env, cwd=tmp_path, stderr=tmp_path / "err") as bridge:
        await bridge.next_frame()
        await bridge.send("control.session.end", {"reason": "done"}, seq=1)
        closed = await bridge.until("session.closed")
        assert closed["payload"]["reason"] == "explicit"
        assert await bridge.exit_code() == 0


async def test_stray_prints_go_to_stderr_and_logs_follow_the_log_level(
    tmp_path: Path, plugin_env: dict[str, str]
) -> None:
    stderr = tmp_path / "err"
    args = ("--log-level", "info", "--adapter", "scripted-cli", "--setting", "script=print")
    async with serve(*args, env=plugin_env, cwd=tmp_path, stderr=stderr) as bridge:
        await bridge.next_frame()
        await bridge.write(b"nonsense\n")
        await bridge.send("control.prompt.request", {"prompt_id": "p1", "text": "hi"}, seq=1)
        await bridge.until("session.turn.end")
        await bridge.close_stdin()
        frames = await bridge.rest()
        assert await bridge.exit_code() == 0
    assert_valid_stream(frames)
    logged = stderr.read_text()
    assert "stray output that is not a frame" in logged
    assert "INFO rawp_adapters.session" in logged
    assert "error_code='INVALID_FRAME'" in logged


async def test_a_flood_of_frames_arrives_whole_in_order_and_complete(
    tmp_path: Path, plugin_env: dict[str, str]
) -> None:
    args = ("--adapter", "scripted-cli", "--setting", "script=flood")
    async with serve(*args, env=plugin_env, cwd=tmp_path, stderr=tmp_path / "err") as bridge:
        await bridge.next_frame()
        await bridge.send("control.prompt.request", {"prompt_id": "p1", "text": "go"}, seq=1)
        await bridge.until("session.turn.end")
        await bridge.close_stdin()
        frames = await bridge.rest()
        assert await bridge.exit_code() == 0
    deltas = [f["payload"]["text"] for f in frames if f["type"] == "agent.text.delta"]
    assert deltas == [f"{n} " for n in range(FLOOD)]
    assert_valid_stream(frames)


async def test_a_master_that_is_gone_ends_the_session_and_the_bridge_exits_1(
    tmp_path: Path, plugin_env: dict[str, str]
) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will ever read the frames
    try:
        with (tmp_path / "err").open("wb") as err:
            process = await anyio.open_process(
                [*CLI, "serve", "--stdio", "--adapter", "scripted-cli"],
                env=plugin_env,
                cwd=tmp_path,
                stdout=write_end,
                stderr=err,
            )
            async with process:
                with anyio.fail_after(WAIT):
                    assert await process.wait() == 1
    finally:
        os.close(write_end)
    assert "writing frames failed; ending the session" in (tmp_path / "err").read_text()


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
async def test_the_sdk_demo_adapter_works_through_the_bridge(tmp_path: Path, backend: str) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    args = ("--backend", backend, "--setting", 'core_options={"delay_ms": 0}')
    async with serve(*args, env=None, cwd=workspace, stderr=tmp_path / "err") as bridge:
        capabilities = await bridge.next_frame()
        assert capabilities["payload"]["adapter_type"] == "sdk"
        await bridge.send("control.prompt.request", {"prompt_id": "p1", "text": "keep me"}, seq=1)
        request = await bridge.until("agent.interaction.request")
        await bridge.send(
            "control.interaction.response",
            {"interaction_id": request["payload"]["interaction_id"], "decision": "allow"},
            seq=2,
        )
        end = await bridge.until("session.turn.end")
        await bridge.close_stdin()
        frames = await bridge.rest()
        assert await bridge.exit_code() == 0
    assert end["payload"]["stop_reason"] == "end_turn"
    [written] = workspace.iterdir()
    assert "keep me" in written.read_text()
    assert_valid_stream(frames)


def test_an_adapter_that_is_not_installed_is_named_with_the_installed_ones(
    tmp_path: Path, plugin_env: dict[str, str]
) -> None:
    result = run_cli("serve", "--stdio", "--adapter", "nope", env=plugin_env, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == b""
    message = result.stderr.decode()
    assert "no adapter 'nope' is installed" in message
    assert "scripted-cli" in message


def test_settings_the_adapter_rejects_exit_2_without_starting(
    tmp_path: Path, plugin_env: dict[str, str]
) -> None:
    result = run_cli(
        "serve",
        "--stdio",
        "--adapter",
        "scripted-cli",
        "--setting",
        "script=dance",
        env=plugin_env,
        cwd=tmp_path,
    )
    assert result.returncode == 2
    assert result.stdout == b""
    assert "invalid settings for 'scripted-cli'" in result.stderr.decode()
