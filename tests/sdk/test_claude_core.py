"""The Claude core with the real Claude Agent SDK and its bundled CLI, offline: the CLI
talks to the project's scripted Anthropic Messages API on 127.0.0.1."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream
from rawp_adapter_sdk import SdkAdapter

from rawp_adapters.frames import (
    AgentErrorFrame,
    InteractionRequestFrame,
    Mode,
    SessionCapabilitiesFrame,
    SessionCompactedFrame,
    TextDeltaFrame,
    ToolInvokeRequestFrame,
    ToolInvokeResultFrame,
)
from rawp_adapters.testing import deny_all, drive, never_answer
from tests.sdk.claude_sessions import ClaudeRun, claude_session, claude_settings
from tests.sdk.waits import idle_after
from tests.support.claude import bundled_claude_cli, needs_claude_sdk
from tests.support.llm_anthropic import (
    COMPACT_SUMMARY,
    COMPACTION_REQUEST,
    DEFAULT_TEXT,
    PARALLEL_COMMANDS,
    THINKING_TEXT,
    ScriptedAnthropic,
    last_user_text,
    tool_results,
)
from tests.support.llm_anthropic import Reply as ApiReply
from tests.support.processes import wait_gone

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.claude,
    needs_claude_sdk,
]

HOST_SCRIPT = Path(__file__).with_name("claude_host.py")
FAKE_CLI_SCRIPT = Path(__file__).with_name("fake_claude_cli.py")
WRITE_OUT = "RUN_BASH echo hi > out.txt"


def files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


async def test_a_text_turn_streams_thinking_then_text_and_reports_usage(
    api: ScriptedAnthropic, tmp_path: Path
) -> None:
    async with claude_session(api, tmp_path) as run:
        turn = await run.driver.prompt("THINK_FIRST say hello")
        caps = run.driver.frames[0]
    assert caps.type == "session.capabilities"
    features = caps.payload.features
    assert (features.adapter_type, features.thinking, features.permission_requests) == (
        "sdk",
        True,
        True,
    )
    assert caps.payload.agent is not None
    assert caps.payload.agent.name == "claude-code"
    assert turn.text == DEFAULT_TEXT
    (thinking,) = turn.of_type("agent.thinking.done")
    (text,) = turn.of_type("agent.text.done")
    assert thinking.payload.text == THINKING_TEXT
    assert (thinking.payload.index, text.payload.index) == (0, 1)
    assert text.payload.text == DEFAULT_TEXT
    assert turn.stop_reason == "end_turn"
    usage = turn.end.payload.usage
    assert usage is not None
    assert usage.input_tokens == 10
    assert usage.output_tokens is not None
    assert usage.output_tokens > 0
    assert len(turn.of_type("session.usage")) == 1


async def reported_version(run: ClaudeRun) -> str | None:
    caps = await run.driver.wait_for(SessionCapabilitiesFrame)
    assert caps.payload.agent is not None
    return caps.payload.agent.version


async def test_capabilities_report_the_version_the_bundled_cli_gives(
    api: ScriptedAnthropic, tmp_path: Path
) -> None:
    cli = bundled_claude_cli()
    if cli is None:
        pytest.skip("no CLI is bundled with claude-agent-sdk")
    said = await anyio.run_process([cli, "--version"])
    async with claude_session(api, tmp_path) as run:
        version = await reported_version(run)
    assert version is not None
    assert said.stdout.decode().split()[0] == version


async def test_capabilities_report_the_version_of_the_cli_at_cli_path_not_the_bundled_one(
    api: ScriptedAnthropic, tmp_path: Path
) -> None:
    cli = tmp_path / "claude"
    cli.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE_CLI_SCRIPT}" 9.9.9 "$@"\n')
    cli.chmod(0o755)
    async with claude_session(api, tmp_path, cli_path=cli) as run:
        assert await reported_version(run) == "9.9.9"


async def test_an_allowed_tool_call_runs_and_writes_the_file(
    api: ScriptedAnthropic, tmp_path: Path
) -> None:
    async with claude_session(api, tmp_path) as run:
        turn = await run.driver.prompt(WRITE_OUT)
        assert (run.workspace / "out.txt").read_text() == "hi\n"
    (call,) = turn.of_type(ToolInvokeRequestFrame)
    (request,) = turn.of_type(InteractionRequestFrame)
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert call.payload.tool_name == "Bash"
    assert request.payload.interaction_type == "PERMISSION"
    assert request.payload.context.tool_name == "Bash"
    assert request.payload.context.tool_input == call.payload.input
    assert request.payload.context.tool_call_id == call.payload.invocation_id
    assert request.payload.timeout_ms == 30_000
    assert result.payload.invocation_id == call.payload.invocation_id
    assert not result.payload.is_error
    assert turn.stop_reason == "end_turn"


async def test_a_denied_tool_call_does_not_run_and_the_model_is_told_it_was_refused(
    api: ScriptedAnthropic, tmp_path: Path
) -> None:
    async with claude_session(api, tmp_path, policy=deny_all) as run:
        turn = await run.driver.prompt(WRITE_OUT)
        assert files(run.workspace) == []
    (told,) = tool_results(api.requests[-1])
    assert told["is_error"] is True
    assert "refused" in json.dumps(told["content"])
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert result.payload.is_error
    assert turn.stop_reason == "end_turn"


async def test_an_unanswered_tool_call_is_denied_and_the_model_is_told_it_timed_out(
    api: ScriptedAnthropic, tmp_path: Path
) -> None:
    async with claude_session(api, tmp_path, policy=never_answer, timeout_ms=300) as run:
        turn = await run.driver.prompt(WRITE_OUT)
        assert files(run.workspace) == []
    (told,) = tool_results(api.requests[-1])
    assert told["is_error"] is True
    assert "timed out" in json.dumps(told["content"])
    assert turn.stop_reason == "end_turn"


async def test_an_allowed_tool_call_with_edited_input_runs_the_edit(
    api: ScriptedAnthropic, tmp_path: Path
) -> None:
    from rawp_adapters.testing import Reply

    edit = json.dumps({"command": "echo changed > out.txt"})
    async with claude_session(api, tmp_path, policy=lambda _: Reply.allow(edit)) as run:
        turn = await run.driver.prompt(WRITE_OUT)
        assert (run.workspace / "out.txt").read_text() == "changed\n"
    assert turn.stop_reason == "end_turn"


async def test_aborting_while_a_permission_is_pending_denies_it_and_cancels_the_turn(
    api: ScriptedAnthropic, tmp_path: Path
) -> None:
    async with claude_session(api, tmp_path, policy=never_answer) as run:
        d = run.driver
        start = await d.start_prompt(WRITE_OUT)
        await d.wait_for(InteractionRequestFrame)
        await d.send(d.control.abort(start.payload.turn_id))
        turn = await d.wait_turn(start.payload.turn_id)
        assert files(run.workspace) == []
        again = await d.prompt("hello again")
    assert turn.stop_reason == "cancelled"
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert result.payload.is_error
    assert len(api.requests) == 2  # the model was not asked to go on after the abort
    assert again.text == DEFAULT_TEXT


async def test_aborting_while_the_model_streams_cancels_the_turn(
    api: ScriptedAnthropic, tmp_path: Path
) -> None:
    async with claude_session(api, tmp_path) as run:
        d = run.driver
        start = await d.start_prompt("SLOW_STREAM 200 50")
        await d.wait_for(TextDeltaFrame)
        await d.send(d.control.abort(start.payload.turn_id))
        turn = await d.wait_turn(start.payload.turn_id, timeout=10)
        again = await d.prompt("hello again")
    assert turn.stop_reason == "cancelled"
    assert len(turn.of_type(TextDeltaFrame)) < 200
    assert again.stop_reason == "end_turn"
    assert again.text == DEFAULT_TEXT


async def test_turns_of_one_session_share_one_cli_and_one_conversation(
    api: ScriptedAnthropic, tmp_path: Path
) -> None:
    async with claude_session(api, tmp_path) as run:
        pid = run.core.cli_pid
        turns = [await run.driver.prompt(f"turn number {n}") for n in range(3)]
        assert run.core.cli_pid == pid
    assert [t.stop_reason for t in turns] == ["end_turn"] * 3
    assert all(t.text == DEFAULT_TEXT for t in turns)
    last = api.requests[-1]
    assert last_user_text(last) == "turn number 2"
    said = json.dumps(last["messages"])
    assert "turn number 0" in said
    assert "turn number 1" in said


async def test_an_api_error_gives_an_agent_error_then_an_error_turn_end(
    api: ScriptedAnthropic, tmp_path: Path
) -> None:
    async with claude_session(api, tmp_path) as run:
        turn = await run.driver.prompt("API_ERROR 500")
        assert not run.driver.session.closed
    (error,) = turn.of_type(AgentErrorFrame)
    assert error.payload.severity == "error"
    assert "500" in error.payload.message
    assert [f.type for f in turn.frames][-2:] == ["agent.error", "session.turn.end"]
    assert turn.stop_reason == "error"


async def test_parallel_tool_calls_get_one_permission_request_each(
    api: ScriptedAnthropic, tmp_path: Path
) -> None:
    async with claude_session(api, tmp_path, policy=never_answer) as run:
        d = run.driver
        start = await d.start_prompt("PARALLEL_TOOLS")
        answered: set[str] = set()
        # Claude Code asks for these one after the other: answer each as it comes.
        while len(answered) < len(PARALLEL_COMMANDS):
            request = await d.wait_for(
                InteractionRequestFrame,
                where=lambda f: f.payload.interaction_id not in answered,
            )
            answered.add(request.payload.interaction_id)
            await d.send(d.control.allow(request.payload.interaction_id))
        turn = await d.wait_turn(start.payload.turn_id)
        assert files(run.workspace) == ["one.txt", "two.txt"]
    calls = {f.payload.invocation_id for f in turn.of_type(ToolInvokeRequestFrame)}
    asked = {f.payload.context.tool_call_id for f in turn.of_type(InteractionRequestFrame)}
    assert len(calls) == 2
    assert asked == calls


async def test_the_cli_keeps_its_config_and_temp_files_in_the_sessions_own_directory(
    api: ScriptedAnthropic, tmp_path: Path
) -> None:
    async with claude_session(api, tmp_path) as run:
        await run.driver.prompt(WRITE_OUT)
        state = run.core.state_path
        assert state is not None
        assert state.parent == tmp_path / "state"
        assert any((state / "config").iterdir())
        assert files(run.home) == []
    assert not state.exists()


async def test_a_cli_that_cannot_start_is_reported_and_leaves_nothing_behind(
    api: ScriptedAnthropic, tmp_path: Path
) -> None:
    settings = claude_settings(api, tmp_path, timeout_ms=1000)
    settings["core_options"]["cli_path"] = str(tmp_path / "no-such-claude")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    async with drive(SdkAdapter.from_settings(settings), workspace=workspace) as d:
        closed = await d.closed()
    assert closed.payload.reason == "error"
    (error,) = d.of_type(AgentErrorFrame)
    assert error.payload.error_code == "SPAWN_FAILED"
    assert "no-such-claude" in error.payload.message
    assert files(tmp_path / "state") == []


async def test_a_cli_that_died_between_turns_fails_the_next_one_and_closes_the_session(
    api: ScriptedAnthropic, tmp_path: Path
) -> None:
    async with claude_session(api, tmp_path) as run:
        assert run.core.cli_pid is not None
        cli = psutil.Process(run.core.cli_pid)
        cli.kill()
        turn = await run.driver.prompt("hello")
        closed = await run.driver.closed()
    (error,) = turn.of_type(AgentErrorFrame)
    assert error.payload.severity == "fatal"
    assert error.payload.error_code == "PROCESS_EXIT"
    assert turn.stop_reason == "error"
    assert closed.payload.reason == "agent_exit"


async def test_a_turn_ended_for_the_core_after_the_abort_grace_does_not_spill_into_the_next(
    api: ScriptedAnthropic, tmp_path: Path
) -> None:
    """The session stops waiting for an aborted turn after its grace; the CLI's late end
    of that turn must be read away before the next prompt, not taken as its answer."""
    async with claude_session(api, tmp_path, abort_grace=0.0) as run:
        d = run.driver
        start = await d.start_prompt("SLOW_STREAM 400 50")
        await d.wait_for(TextDeltaFrame)
        await d.send(d.control.abort(start.payload.turn_id))
        aborted = await d.wait_turn(start.payload.turn_id)
        turn = await d.prompt("hello again")
    assert aborted.stop_reason == "cancelled"
    assert turn.stop_reason == "end_turn"
    assert turn.text == DEFAULT_TEXT
    assert last_user_text(api.requests[-1]).endswith("hello again")


def command_line(process: psutil.Process) -> str:
    """Its command line; empty for one that has just ended (the CLI's short-lived
    helpers come and go while the tree is read)."""
    try:
        return " ".join(process.cmdline())
    except psutil.Error:
        return ""


async def wait_for_tool_process(cli_pid: int, timeout: float) -> list[psutil.Process]:
    """The CLI's process tree once the tool command (the host's Python) runs in it."""
    with anyio.fail_after(timeout):
        while True:
            tree = [psutil.Process(cli_pid), *psutil.Process(cli_pid).children(recursive=True)]
            if any("time.sleep(600)" in command_line(p) for p in tree[1:]):
                return tree
            await anyio.sleep(0.05)


@pytest.mark.parametrize("moment", ["permission", "tool"])
async def test_the_cli_and_its_tools_die_with_a_host_that_is_killed(
    api: ScriptedAnthropic, tmp_path: Path, anyio_backend: str, moment: str
) -> None:
    """``permission``: killed while a permission is pending; ``tool``: while an allowed
    command runs (without the watchdog the CLI and the command would run on)."""
    settings = claude_settings(api, tmp_path, timeout_ms=600_000)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    argv = [sys.executable, str(HOST_SCRIPT), json.dumps(settings), str(workspace)]
    host = await anyio.open_process(
        [*argv, anyio_backend, moment], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        assert host.stdout is not None
        with anyio.fail_after(30):
            line = await BufferedByteReceiveStream(host.stdout).receive_until(b"\n", 4096)
        pids = json.loads(line)
        tree = [psutil.Process(pids["cli_pid"])]
        if moment == "tool":
            tree = await wait_for_tool_process(pids["cli_pid"], timeout=15)
        host.kill()
        await host.wait()
        await wait_gone([p.pid for p in tree] + [pids["guard_pid"]], timeout=15)
    finally:
        if host.returncode is None:
            host.kill()
            await host.wait()
    if moment == "permission":
        assert files(workspace) == []


async def test_compaction_replaces_the_conversation_by_the_models_summary(
    api: ScriptedAnthropic, tmp_path: Path
) -> None:
    async with claude_session(api, tmp_path) as run:
        d = run.driver
        first = await d.prompt("remember the word pelican")
        await d.send(d.control.compact("keep the bird"))
        compacted = await d.wait_for(SessionCompactedFrame)
        await idle_after(d, compacted)
        asked = last_user_text(api.requests[-1])
        turn = await d.prompt("what now?")
    caps = d.of_type(SessionCapabilitiesFrame)[0]
    assert caps.payload.features.context_compaction
    assert COMPACTION_REQUEST in asked
    assert "keep the bird" in asked
    assert compacted.payload.trigger == "manual"
    assert compacted.payload.summary == COMPACT_SUMMARY
    assert compacted.payload.tokens_before is not None
    assert compacted.payload.tokens_before > 0
    said_after = json.dumps(api.requests[-1]["messages"])
    assert COMPACT_SUMMARY in said_after
    assert "pelican" not in said_after
    assert turn.text == DEFAULT_TEXT
    # The compaction's cost is not billed to the next turn.
    costs = [t.end.payload.usage.cost_usd if t.end.payload.usage else None for t in (first, turn)]
    assert costs[0] is not None
    assert costs[1] == pytest.approx(costs[0])


def failing_compaction(body: dict[str, Any]) -> ApiReply | None:
    if COMPACTION_REQUEST in last_user_text(body):
        return ApiReply(error_status=500)
    return None


async def test_a_compaction_that_fails_is_an_agent_error_and_the_session_goes_on(
    tmp_path: Path,
) -> None:
    with ScriptedAnthropic(responder=failing_compaction) as api:
        async with claude_session(api, tmp_path) as run:
            d = run.driver
            await d.prompt("hello")
            await d.send(d.control.compact())
            error = await d.wait_for(AgentErrorFrame)
            await idle_after(d, error)
            turn = await d.prompt("hello again")
    assert error.payload.severity == "error"
    assert "500" in error.payload.message
    assert d.of_type(SessionCompactedFrame) == []
    assert turn.text == DEFAULT_TEXT


async def test_a_compaction_of_a_fresh_session_is_answered_nothing_compacted_not_failed(
    api: ScriptedAnthropic, tmp_path: Path
) -> None:
    async with claude_session(api, tmp_path) as run:
        d = run.driver
        await d.send(d.control.compact())
        compacted = await d.wait_for(SessionCompactedFrame)
        await idle_after(d, compacted)
        turn = await d.prompt("hello")
    assert compacted.payload.trigger == "manual"
    assert not compacted.payload.compacted
    assert d.of_type(AgentErrorFrame) == []
    assert turn.text == DEFAULT_TEXT


class SignalsModeSwitches(SdkAdapter):
    """Lets a test wait until a mode switch has been applied (no frame tells the Master)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._applied, self.applied = anyio.create_memory_object_stream[Mode](4)

    async def switch_mode(self, mode: Mode) -> None:
        await super().switch_mode(mode)
        await self._applied.send(mode)


PLAN_MODE_ACTIVE = "Plan mode is active"
PLAN_MODE_EXITED = "You have exited plan mode"


async def test_plan_mode_tells_the_model_to_change_nothing_until_default_mode_is_back(
    api: ScriptedAnthropic, tmp_path: Path
) -> None:
    async with claude_session(api, tmp_path, adapter_class=SignalsModeSwitches) as run:
        d = run.driver
        adapter = d.session.adapter
        assert isinstance(adapter, SignalsModeSwitches)
        await d.prompt("hello")
        told = [json.dumps(api.requests[-1]["messages"])]
        for mode in ("plan", "default"):
            await d.send(d.control.switch_mode(mode))
            with anyio.fail_after(10):
                assert await adapter.applied.receive() == mode
            seen = len(api.requests)
            await d.prompt(f"now in {mode} mode")
            # Only what this turn added to the conversation.
            new = api.requests[seen]["messages"][len(api.requests[seen - 1]["messages"]) :]
            told.append(json.dumps(new))
    caps = d.of_type(SessionCapabilitiesFrame)[0]
    assert caps.payload.features.plan_mode
    assert PLAN_MODE_ACTIVE not in told[0]
    assert PLAN_MODE_ACTIVE in told[1]
    assert PLAN_MODE_EXITED not in told[1]
    assert PLAN_MODE_EXITED in told[2]
    assert PLAN_MODE_ACTIVE not in told[2]
    assert d.of_type("session.error") == []
