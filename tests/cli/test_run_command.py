"""``rawp-adapters run`` as a real subprocess: the sdk demo, JSON lines, Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import anyio
import pytest

from rawp_adapters import LineFramer, decode_frame
from rawp_adapters.frames import TurnEndFrame
from rawp_adapters.testing import assert_valid_stream
from tests.cli.conftest import CLI, REPO_ROOT, WAIT, frames_of, run_cli
from tests.process.helpers import fake_command

DEMO_FILE = "rawp-demo.txt"
FAST = ("--setting", 'core_options={"delay_ms": 0}')


def test_the_sdk_demo_asks_in_the_terminal_and_writes_after_yes(tmp_path: Path) -> None:
    result = run_cli("run", *FAST, "keep me", input=b"y\n", cwd=tmp_path)
    shown = result.stdout.decode()
    assert result.returncode == 0, result.stderr
    assert "keep me" in (tmp_path / DEMO_FILE).read_text()
    assert "\n  | " in "\n" + shown  # thinking, prefixed
    assert "-> write_file {path: rawp-demo.txt, content: " in shown
    assert "Allow write_file {path: rawp-demo.txt, content: " in shown
    assert "\nallowed\n" in shown


def test_the_sdk_demo_is_denied_when_stdin_is_closed(tmp_path: Path) -> None:
    result = run_cli("run", *FAST, "--workspace", str(tmp_path), "keep me", cwd=tmp_path.parent)
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / DEMO_FILE).exists()
    assert "denied: no more input" in result.stdout.decode()


def test_jsonl_prints_only_valid_frames_and_the_decisions_go_to_stderr(tmp_path: Path) -> None:
    result = run_cli("run", *FAST, "--jsonl", "--no", "keep me", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    frames = frames_of(result.stdout)
    assert_valid_stream(frames)
    assert [f["type"] for f in frames].count("agent.interaction.request") == 1
    assert "denied write_file {path: rawp-demo.txt" in result.stderr.decode()
    assert not (tmp_path / DEMO_FILE).exists()


def test_a_failed_turn_exits_1(tmp_path: Path, plugin_env: dict[str, str]) -> None:
    result = run_cli(
        "run", "--adapter", "scripted-cli", "--setting", "script=fail", "go",
        env=plugin_env, cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 1
    assert "error [AGENT_ERROR]: the model is overloaded" in result.stdout.decode()


@pytest.mark.parametrize(
    ("args", "complaint"),
    [
        (("--workspace", "does-not-exist", "go"), "is not a directory"),
        (("--yes", "--no", "go"), "not allowed with argument"),
        (("--permission-timeout", "0", "go"), "must be more than 0"),
        (("--settings-json", "[1]", "go"), "must be a JSON object"),
        (("--setting", "novalue", "go"), "--setting needs KEY=VALUE"),
    ],
)
def test_bad_options_exit_2_with_a_message(
    tmp_path: Path, args: tuple[str, ...], complaint: str
) -> None:
    result = run_cli("run", *args, cwd=tmp_path)
    assert result.returncode == 2
    assert complaint in result.stderr.decode()


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child is POSIX")
@pytest.mark.anyio
async def test_ctrl_c_aborts_the_turn_ends_the_session_and_exits_130(
    tmp_path: Path, plugin_env: dict[str, str]
) -> None:
    args = ["run", "--jsonl", "--adapter", "scripted-cli", "--setting", "script=wait_for_abort"]
    async with await anyio.open_process(
        [*CLI, *args, "go"], env=plugin_env, cwd=tmp_path
    ) as process:
        assert process.stdout is not None
        framer = LineFramer()
        frames = []
        with anyio.fail_after(WAIT):
            async for chunk in process.stdout:
                for line in framer.feed(chunk):
                    assert isinstance(line, bytes)
                    frames.append(decode_frame(line))
                    if frames[-1].type == "agent.text.delta":
                        process.send_signal(signal.SIGINT)
            code = await process.wait()
    assert code == 130
    ends = [f.payload.stop_reason for f in frames if isinstance(f, TurnEndFrame)]
    assert ends == ["cancelled"]
    assert frames[-1].type == "session.closed"
    assert_valid_stream(frames)


def test_the_console_script_is_installed_next_to_the_interpreter() -> None:
    script = Path(sys.executable).parent / (
        "rawp-adapters.exe" if sys.platform == "win32" else "rawp-adapters"
    )
    if not script.exists():
        pytest.skip("rawp-adapters is not installed as a console script here")
    import subprocess

    result = subprocess.run([str(script), "--version"], capture_output=True, timeout=WAIT)
    assert result.returncode == 0
    assert result.stdout.decode().startswith("rawp-adapters ")


def test_the_trio_backend_without_trio_installed_is_a_one_line_error(tmp_path: Path) -> None:
    hidden = tmp_path / "no-trio"
    (hidden / "trio").mkdir(parents=True)
    (hidden / "trio" / "__init__.py").write_text("raise ImportError('No module named trio')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(hidden), str(REPO_ROOT)])}
    result = run_cli("run", "--backend", "trio", "hi", cwd=tmp_path, env=env)
    assert result.returncode == 2
    assert result.stderr.decode() == (
        "rawp-adapters: --backend trio needs trio: pip install 'rawp-adapters[trio]'\n"
    )


def test_an_sdk_core_given_by_import_path_needs_the_explicit_flag(tmp_path: Path) -> None:
    core = ("--setting", "core=rawp_adapter_sdk.cores.demo:DemoCore", *FAST)
    refused = run_cli("run", *core, "--no", "hi", cwd=tmp_path)
    assert refused.returncode == 2
    message = refused.stderr.decode()
    assert "--allow-import-path" in message
    assert message.count("\n") == 1
    allowed = run_cli("run", *core, "--allow-import-path", "--no", "hi", cwd=tmp_path)
    assert allowed.returncode == 0, allowed.stderr


def test_run_says_when_the_agent_gets_the_whole_environment(tmp_path: Path) -> None:
    command = json.dumps(fake_command())
    inherit = run_cli(
        "run", "--adapter", "process", "--setting", f"command={command}", "--no", "hi",
        cwd=tmp_path,
    )  # fmt: skip
    assert inherit.returncode == 0, inherit.stderr
    assert "note: the agent gets this shell's whole environment" in inherit.stdout.decode()
    allowlist = run_cli(
        "run", "--adapter", "process", "--setting", f"command={command}",
        "--setting", "env_policy=allowlist", "--no", "hi",
        cwd=tmp_path,
    )  # fmt: skip
    assert allowlist.returncode == 0, allowlist.stderr
    assert "whole environment" not in allowlist.stdout.decode()
