"""The process adapter end to end, against small scripted agent processes (fakes/)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from signal import SIGUSR1

import anyio
import psutil
import pytest
from rawp_adapter_process import ProcessAdapter
from rawp_adapter_process._settings import DEFAULT_PERMISSION_TOOLS

from rawp_adapters import SessionOptions
from rawp_adapters.frames import (
    AgentErrorFrame,
    ImageInput,
    InteractionRequestFrame,
    SessionCapabilitiesFrame,
    SessionCompactedFrame,
    SessionErrorFrame,
    ToolInvokeResultFrame,
    TurnStartFrame,
)
from rawp_adapters.testing import Reply, allow_all, deny_all, drive, never_answer, run_conformance
from tests.process.helpers import fake_adapter, running, the_fake_agent

pytestmark = pytest.mark.anyio


# ------------------------------------------------------------------ start


async def test_a_missing_binary_fails_the_start_with_spawn_failed(tmp_path: Path) -> None:
    adapter = ProcessAdapter.from_settings({"command": [str(tmp_path / "no-such-agent")]})
    async with drive(adapter, workspace=tmp_path) as d:
        closed = await d.closed()
    (error,) = d.of_type(AgentErrorFrame)
    assert error.payload.error_code == "SPAWN_FAILED"
    assert error.payload.severity == "fatal"
    assert "no-such-agent" in error.payload.message
    assert closed.payload.reason == "error"


async def test_an_agent_that_cannot_be_guarded_fails_the_start_and_is_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    adapter = fake_adapter()
    # The agent's command is already set: only the guard's interpreter is missing.
    monkeypatch.setattr(sys, "executable", sys.executable + "-missing-interpreter")
    async with drive(adapter, workspace=tmp_path) as d:
        closed = await d.closed()
    (error,) = d.of_type(AgentErrorFrame)
    assert error.payload.error_code == "SPAWN_FAILED"
    assert "parent-death guard" in error.payload.message
    assert closed.payload.reason == "error"
    assert psutil.Process().children(recursive=True) == []


async def test_an_agent_that_exits_before_ready_fails_with_its_stderr_tail(
    tmp_path: Path,
) -> None:
    async with drive(fake_adapter("--exit-before-ready", "3"), workspace=tmp_path) as d:
        await d.closed()
    (error,) = d.of_type(AgentErrorFrame)
    assert error.payload.error_code == "SPAWN_FAILED"
    assert error.payload.exit_code == 3
    assert error.payload.stderr_tail == "No models available."
    assert "before it was ready" in error.payload.message


async def test_an_agent_that_never_gets_ready_fails_at_the_ready_timeout(tmp_path: Path) -> None:
    started = time.monotonic()
    async with drive(fake_adapter("--mute", ready_timeout=0.5), workspace=tmp_path) as d:
        await d.closed()
    (error,) = d.of_type(AgentErrorFrame)
    assert error.payload.error_code == "SPAWN_FAILED"
    assert "not ready within 0.5 s" in error.payload.message
    assert time.monotonic() - started < 10


async def test_an_agent_without_a_ready_frame_is_ready_once_it_answers_get_state(
    tmp_path: Path,
) -> None:
    async with drive(fake_adapter("--no-ready"), workspace=tmp_path) as d:
        turn = await d.prompt("hi")
        assert turn.text == "echo: hi"


async def test_capabilities_state_what_the_agent_can_do(tmp_path: Path) -> None:
    async with drive(fake_adapter(), workspace=tmp_path) as d:
        caps = await d.wait_for(SessionCapabilitiesFrame)
        mark = len(d.frames)
        await d.send(d.control.switch_mode("plan"))
        error = await d.wait_for(SessionErrorFrame, after=mark)
    features = caps.payload.features
    assert features.adapter_type == "process"
    assert features.context_compaction
    assert features.permission_requests
    assert features.abort
    assert not features.plan_mode
    assert not features.single_turn_process
    assert caps.payload.agent is not None
    assert (caps.payload.agent.name, caps.payload.agent.version) == ("fake", "0.0.1-fake")
    assert error.payload.error_code == "UNSUPPORTED"


async def test_an_agent_slow_to_say_what_it_can_is_waited_for_as_any_command(
    tmp_path: Path,
) -> None:
    # omp on a loaded host took over 5 s to list its models: its session claimed none
    async with drive(fake_adapter("--models-after", "6"), workspace=tmp_path) as d:
        caps = await d.wait_for(SessionCapabilitiesFrame)
    assert caps.payload.features.model_list
    assert caps.payload.features.model_change


async def test_the_agent_runs_in_the_workspace_with_the_rawp_variables_winning(
    tmp_path: Path,
) -> None:
    adapter = fake_adapter(
        env_policy="allowlist",
        env_allowlist=["PATH"],
        env={"FAKE_EXTRA": "1", "RAWP_SESSION_ID": "spoofed"},
    )
    async with drive(adapter, workspace=tmp_path) as d:
        turn = await d.prompt("ENV")
    seen = json.loads(turn.text)
    assert seen["cwd"] == str(tmp_path)
    assert "HOME" not in seen["env"]
    assert seen["env"]["FAKE_EXTRA"] == "1"
    assert seen["env"]["RAWP_SESSION_ID"] == d.session.session_id
    assert seen["env"]["RAWP_WORKSPACE_PATH"] == str(tmp_path)
    assert seen["env"]["RAWP_DPS_VERSION"] == "rawp-dps-1.0"
    assert seen["env"]["RAWP_PERMISSION_TOOLS"] == ",".join(DEFAULT_PERMISSION_TOOLS)


# ------------------------------------------------------------------ turns


async def test_prompt_images_reach_the_agent_as_image_content(tmp_path: Path) -> None:
    image = ImageInput(media_type="image/png", data="iVBORw0KGgo=")
    async with drive(fake_adapter(), workspace=tmp_path) as d:
        frame = d.control.prompt("IMAGES")
        payload = frame.payload.model_copy(update={"images": [image]})
        await d.send(frame.model_copy(update={"payload": payload}))
        start = await d.wait_for(
            TurnStartFrame, where=lambda f: f.payload.prompt_id == payload.prompt_id
        )
        turn = await d.wait_turn(start.payload.turn_id)
    assert json.loads(turn.text) == [
        {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
    ]


@pytest.mark.parametrize("flags", [(), ("--terminal",)], ids=["get_state", "isTerminal"])
async def test_a_text_turn_streams_deltas_and_ends_with_its_usage(
    tmp_path: Path, flags: tuple[str, ...]
) -> None:
    async with drive(fake_adapter(*flags), workspace=tmp_path) as d:
        turn = await d.prompt("hi")
    assert turn.text == "echo: hi"
    (done,) = turn.of_type("agent.text.done")
    assert done.payload.text == turn.text
    (usage,) = turn.of_type("session.usage")
    assert (usage.payload.input_tokens, usage.payload.output_tokens) == (10, 5)
    assert turn.stop_reason == "end_turn"
    assert turn.end.payload.usage is not None
    assert turn.end.payload.usage.input_tokens == 10


async def test_a_prompt_answered_twice_runs_once(tmp_path: Path) -> None:
    async with drive(fake_adapter(), workspace=tmp_path) as d:
        turn = await d.prompt("DOUBLE")
        again = await d.prompt("hi")
    assert turn.stop_reason == again.stop_reason == "end_turn"
    assert not d.of_type(AgentErrorFrame)


async def test_answers_without_an_id_are_matched_by_their_command(tmp_path: Path) -> None:
    async with drive(fake_adapter("--no-ids", command_timeout=5), workspace=tmp_path) as d:
        turn = await d.prompt("hi")
    assert turn.stop_reason == "end_turn"
    assert turn.text == "echo: hi"


async def test_a_refused_prompt_ends_the_turn_with_the_agents_reason(tmp_path: Path) -> None:
    async with drive(fake_adapter(), workspace=tmp_path) as d:
        turn = await d.prompt("REFUSE")
        after = await d.prompt("hi")
    (error,) = turn.of_type("agent.error")
    assert "No API key found for fake" in error.payload.message
    assert turn.stop_reason == "error"
    assert after.stop_reason == "end_turn"


async def test_failed_retries_end_the_turn_with_the_final_error(tmp_path: Path) -> None:
    async with drive(fake_adapter(), workspace=tmp_path) as d:
        turn = await d.prompt("RETRY 2 1")
    warning, final = turn.of_type("agent.error")
    assert warning.payload.severity == "warning"
    assert "the agent retries it" in warning.payload.message
    assert final.payload.severity == "error"
    assert final.payload.message == "terminated: retries exhausted"
    assert turn.stop_reason == "error"


async def test_abort_stops_a_streaming_turn(tmp_path: Path) -> None:
    async with drive(fake_adapter(), workspace=tmp_path) as d:
        start = await d.start_prompt("HANG")
        await d.wait_for("agent.text.delta", where=lambda f: f.payload.text == "thinking about it")
        await d.send(d.control.abort(start.payload.turn_id))
        turn = await d.wait_turn(start.payload.turn_id, timeout=5)
        after = await d.prompt("hi")
    assert turn.stop_reason == "cancelled"
    assert not turn.of_type("agent.error")
    assert after.stop_reason == "end_turn"


async def test_abort_answers_an_open_dialog_before_the_abort_reaches_the_agent(
    tmp_path: Path,
) -> None:
    async with drive(fake_adapter(), workspace=tmp_path, policy=never_answer) as d:
        start = await d.start_prompt("GATED_HANG")
        await d.wait_for(InteractionRequestFrame)
        await d.send(d.control.abort(start.payload.turn_id))
        turn = await d.wait_turn(start.payload.turn_id, timeout=5)
        after = await d.prompt("hi")
    assert turn.stop_reason == "cancelled"
    assert after.text == "echo: hi"
    assert not d.of_type(AgentErrorFrame)


# ------------------------------------------------------------------ permissions and dialogs


async def test_an_allowed_permission_lets_the_tool_run(tmp_path: Path) -> None:
    async with drive(fake_adapter(), workspace=tmp_path, policy=allow_all) as d:
        turn = await d.prompt("TOOL echo hi")
    (request,) = turn.of_type(InteractionRequestFrame)
    assert request.payload.interaction_type == "PERMISSION"
    context = request.payload.context
    assert (context.tool_name, context.tool_call_id) == ("bash", "call-1")
    assert context.tool_input == {"command": "echo hi"}
    assert request.payload.message == "echo hi"
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert not result.payload.is_error
    assert turn.text.endswith("allowed=True")


@pytest.mark.parametrize(
    ("policy", "timeout_ms"),
    [(deny_all, 60_000), (never_answer, 200), (lambda _: Reply(timeout=True), 60_000)],
    ids=["deny", "own-timeout", "timeout-frame"],
)
async def test_a_permission_not_explicitly_allowed_blocks_the_tool(
    tmp_path: Path, policy: object, timeout_ms: int
) -> None:
    adapter = fake_adapter(interaction_timeout_ms=timeout_ms)
    async with drive(adapter, workspace=tmp_path, policy=policy) as d:  # type: ignore[arg-type]
        turn = await d.prompt("TOOL rm -rf /")
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert result.payload.is_error
    assert turn.text.endswith("allowed=False")


async def test_an_allow_with_an_edited_input_is_a_denial(tmp_path: Path) -> None:
    async with drive(
        fake_adapter(), workspace=tmp_path, policy=lambda _: Reply.allow('{"command": "ls"}')
    ) as d:
        turn = await d.prompt("TOOL rm -rf /")
    assert turn.text.endswith("allowed=False")


@pytest.mark.parametrize("allowed", [True, False])
async def test_omps_builtin_approval_is_a_permission_for_the_announced_tool_call(
    tmp_path: Path, allowed: bool
) -> None:
    policy = allow_all if allowed else deny_all
    async with drive(fake_adapter(), workspace=tmp_path, policy=policy) as d:
        turn = await d.prompt("APPROVAL")
    (request,) = turn.of_type(InteractionRequestFrame)
    context = request.payload.context
    assert request.payload.interaction_type == "PERMISSION"
    assert (context.tool_name, context.tool_call_id) == ("bash", "call-7")
    assert context.tool_input == {"command": "ls"}
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert result.payload.is_error is not allowed


@pytest.mark.parametrize(
    ("method", "kind", "answer"),
    [
        ("select", "SELECT", {"value": "red"}),
        ("input", "INPUT", {"value": ""}),
        ("confirm", "CONFIRM", {"confirmed": True}),
    ],
)
async def test_other_dialogs_become_interactions_and_the_answer_goes_back(
    tmp_path: Path, method: str, kind: str, answer: dict[str, object]
) -> None:
    async with drive(fake_adapter(), workspace=tmp_path, policy=allow_all) as d:
        turn = await d.prompt(f"DIALOG {method}")
    (request,) = turn.of_type(InteractionRequestFrame)
    assert request.payload.interaction_type == kind
    assert request.payload.title == f"A {method}?"
    assert json.loads(turn.text) == answer


async def test_a_denied_select_goes_back_as_cancelled(tmp_path: Path) -> None:
    async with drive(fake_adapter(), workspace=tmp_path, policy=deny_all) as d:
        turn = await d.prompt("DIALOG select")
    assert json.loads(turn.text) == {"cancelled": True}


async def test_a_dialog_the_agent_cancels_is_withdrawn(tmp_path: Path) -> None:
    async with drive(fake_adapter(), workspace=tmp_path, policy=never_answer) as d:
        turn = await d.prompt("CANCEL", timeout=5)
    assert turn.of_type(InteractionRequestFrame)
    assert turn.text == "cancelled"


# ------------------------------------------------------------------ compaction


async def test_compact_reports_the_agents_summary_as_a_manual_compaction(tmp_path: Path) -> None:
    async with drive(fake_adapter(), workspace=tmp_path) as d:
        await d.send(d.control.compact("keep the plan"))
        compacted = await d.wait_for(SessionCompactedFrame)
    assert compacted.payload.trigger == "manual"
    assert compacted.payload.tokens_before == 1234
    assert compacted.payload.summary == "Summary of the fake session."


async def test_a_failed_compaction_is_an_agent_error_and_the_session_goes_on(
    tmp_path: Path,
) -> None:
    async with drive(fake_adapter("--compact-fails"), workspace=tmp_path) as d:
        await d.prompt("hi")
        mark = len(d.frames)
        await d.send(d.control.compact())
        error = await d.wait_for(AgentErrorFrame, after=mark)
        after = await d.prompt("hi")
    assert "Nothing to compact" in error.payload.message
    assert after.stop_reason == "end_turn"


# ------------------------------------------------------------------ exits and signals


@pytest.mark.parametrize(
    ("prompt", "code", "exit_code", "signal"),
    [
        ("EXIT 3", "PROCESS_EXIT", 3, None),
        ("EXIT 143", "SIGNAL_EXIT", 143, "SIGTERM"),
        ("KILL SIGKILL", "SIGNAL_EXIT", None, "SIGKILL"),
        ("KILL SIGTERM", "SIGNAL_EXIT", None, "SIGTERM"),
        ("KILL SIGSEGV", "SIGNAL_EXIT", None, "SIGSEGV"),
    ],
)
async def test_a_death_mid_turn_is_a_fatal_error_that_ends_turn_and_session(
    tmp_path: Path, prompt: str, code: str, exit_code: int | None, signal: str | None
) -> None:
    async with drive(fake_adapter(), workspace=tmp_path) as d:
        start = await d.start_prompt(prompt)
        turn = await d.wait_turn(start.payload.turn_id)
        closed = await d.closed()
    (error,) = turn.of_type("agent.error")
    assert (error.payload.severity, error.payload.error_code) == ("fatal", code)
    assert (error.payload.exit_code, error.payload.signal) == (exit_code, signal)
    assert turn.stop_reason == "error"
    assert closed.payload.reason == "agent_exit"
    assert (closed.payload.exit_code, closed.payload.signal) == (exit_code, signal)


async def test_a_clean_exit_mid_turn_ends_the_turn_normally(tmp_path: Path) -> None:
    async with drive(fake_adapter(), workspace=tmp_path) as d:
        start = await d.start_prompt("EXIT 0")
        turn = await d.wait_turn(start.payload.turn_id)
        closed = await d.closed()
    assert turn.stop_reason == "end_turn"
    assert not d.of_type(AgentErrorFrame)
    assert (closed.payload.reason, closed.payload.exit_code) == ("agent_exit", 0)


@pytest.mark.parametrize(("code", "errors"), [(7, 1), (0, 0)])
async def test_a_death_while_idle_closes_the_session(
    tmp_path: Path, code: int, errors: int
) -> None:
    async with drive(fake_adapter("--exit-on-usr1", str(code)), workspace=tmp_path) as d:
        os.kill(the_fake_agent().pid, SIGUSR1)
        closed = await d.closed()
    assert len(d.of_type(AgentErrorFrame)) == errors
    assert (closed.payload.reason, closed.payload.exit_code) == ("agent_exit", code)


async def test_the_explicit_end_closes_stdin_and_the_agent_exits_cleanly(tmp_path: Path) -> None:
    async with drive(fake_adapter(), workspace=tmp_path) as d:
        await d.prompt("hi")
        closed = await d.end()
    assert (closed.payload.reason, closed.payload.exit_code) == ("explicit", 0)


async def test_an_agent_that_ignores_stdin_and_sigterm_is_killed(tmp_path: Path) -> None:
    adapter = fake_adapter("--ignore-sigterm", stdin_close_grace=0.2, sigterm_grace=0.5)
    async with drive(adapter, workspace=tmp_path) as d:
        await d.prompt("hi")
        started = time.monotonic()
        closed = await d.end()
    assert closed.payload.signal == "SIGKILL"
    assert 0.7 <= time.monotonic() - started < 5


async def test_tool_processes_in_new_sessions_are_gone_after_the_end(tmp_path: Path) -> None:
    async with drive(fake_adapter(), workspace=tmp_path) as d:
        turn = await d.prompt("SPAWN")
        pids = list(json.loads(turn.text).values())
        assert all(running(pid) for pid in pids)
        await d.end()
    assert not any(running(pid) for pid in pids)


# ------------------------------------------------------------------ framing


async def test_an_oversized_line_is_skipped_and_reported_and_the_session_goes_on(
    tmp_path: Path,
) -> None:
    adapter = fake_adapter(max_line_bytes=1024 * 1024)
    async with drive(adapter, workspace=tmp_path) as d:
        turn = await d.prompt("HUGE 3")
    (error,) = turn.of_type("agent.error")
    assert (error.payload.severity, error.payload.error_code) == ("error", "FRAME_TOO_LARGE")
    assert turn.text == "after the huge line"
    assert turn.stop_reason == "end_turn"


async def test_line_separators_and_invalid_utf8_inside_deltas_arrive_intact(
    tmp_path: Path,
) -> None:
    async with drive(fake_adapter(), workspace=tmp_path) as d:
        separators = await d.prompt("SEPARATORS")
        bad = await d.prompt("BAD_BYTES")
    assert separators.text == "raw:\u2028:\u2029:endescaped:\u2028:\u2029:end"
    assert bad.text == "bad:\ufffd\ufffd(:bytesstill here"


async def test_a_flood_of_deltas_to_a_slow_host_does_not_hold_up_the_permission(
    tmp_path: Path,
) -> None:
    options = SessionOptions(frame_buffer=8)
    async with drive(fake_adapter(), workspace=tmp_path, options=options, timeout=60) as d:
        start = await d.start_prompt("FLOOD 20000")
        request = await d.wait_for(InteractionRequestFrame)
        turn = await d.wait_turn(start.payload.turn_id)
    assert len(turn.of_type("agent.text.delta")) == 20000 + 1  # the flood, then allowed=True
    assert request.payload.context.tool_name == "bash"
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert not result.payload.is_error


# ------------------------------------------------------------------ cancellation


async def test_a_host_cancelled_mid_session_still_stops_the_agent_and_its_tools(
    tmp_path: Path,
) -> None:
    with anyio.CancelScope() as scope:
        async with drive(fake_adapter(), workspace=tmp_path) as d:
            turn = await d.prompt("SPAWN")
            pids = list(json.loads(turn.text).values())
            scope.cancel()
            await anyio.sleep_forever()
    assert d.session.closed
    assert not any(running(pid) for pid in pids)


async def test_the_adapter_passes_the_conformance_run(tmp_path: Path) -> None:
    await run_conformance(fake_adapter, workspace=tmp_path, long_prompt="HANG", timeout=30)
