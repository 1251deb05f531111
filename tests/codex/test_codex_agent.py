"""The codex adapter against the real Codex app-server (``@openai/codex`` 0.169.0), offline
against the scripted Responses server, on asyncio and trio. One session per group of
scenarios keeps them quick; every frame stream is checked against the DPS invariants
(``drive``)."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import psutil
import pytest
from rawp_adapter_codex import CodexAdapter

from rawp_adapters.frames import (
    AgentErrorFrame,
    InteractionRequestFrame,
    InteractionResolvedFrame,
    ModelChangedFrame,
    ModelListFrame,
    SessionCapabilitiesFrame,
    SessionCompactedFrame,
    SessionErrorFrame,
    TextDeltaFrame,
    ThinkingDeltaFrame,
    ThinkingDoneFrame,
    ToolInvokeRequestFrame,
    ToolInvokeResultFrame,
)
from rawp_adapters.testing import TurnRecord, allow_all, deny_all, drive, never_answer
from tests.codex.agent import MODELS
from tests.codex.sessions import TIMEOUT, make_adapter, session_processes
from tests.support.aborts import abort_streaming_then_pending, assert_aborted
from tests.support.llm_openai import API_ERROR_MESSAGE, DEFAULT_TEXT, THINKING_TEXT
from tests.support.llm_responses import ScriptedResponses, last_user_text

pytestmark = [pytest.mark.anyio, pytest.mark.codex]


def tool_turn(turn: TurnRecord) -> tuple[str, str, bool]:
    """The one tool a turn asked about: its name, the Master's answer, whether it failed."""
    (request,) = turn.of_type(InteractionRequestFrame)
    (invoked,) = turn.of_type(ToolInvokeRequestFrame)
    (result,) = turn.of_type(ToolInvokeResultFrame)
    (resolved,) = turn.of_type(InteractionResolvedFrame)
    context = request.payload.context
    assert context.tool_call_id == invoked.payload.invocation_id == result.payload.invocation_id
    assert context.tool_name == invoked.payload.tool_name
    return context.tool_name or "", resolved.payload.outcome, result.payload.is_error


async def test_text_thinking_commands_allowed_declined_timed_out_a_file_change_and_no_process_left(
    codex_bin: Path, llm: ScriptedResponses, tmp_path: Path
) -> None:
    adapter, workspace = make_adapter(codex_bin, llm, tmp_path, interaction_timeout_ms=1500)
    async with drive(adapter, workspace=workspace, policy=allow_all, timeout=TIMEOUT) as d:
        text = await d.prompt("THINK_FIRST Say hello.")
        allowed = await d.prompt("RUN_BASH touch allowed.txt")
        changed = await d.prompt("WRITE_FILE notes.txt hello from codex")
        d.policy = deny_all
        declined = await d.prompt("RUN_BASH touch declined.txt")
        d.policy = never_answer
        timed_out = await d.prompt("RUN_BASH touch late.txt")
        running = session_processes(d.session.session_id)
        closed = await d.end()

    (caps,) = d.of_type(SessionCapabilitiesFrame)
    features = caps.payload.features
    assert caps.payload.adapter_type == "process"
    assert caps.payload.agent is not None
    assert (caps.payload.agent.name, caps.payload.agent.version) == ("codex", "0.169.0")
    assert features.permission_requests
    assert features.thinking
    assert features.steering
    assert features.process_containment is not None

    assert text.stop_reason == "end_turn"
    assert DEFAULT_TEXT in text.text
    (thought,) = text.of_type(ThinkingDoneFrame)
    assert thought.payload.text == THINKING_TEXT
    assert "".join(f.payload.text for f in text.of_type(ThinkingDeltaFrame)) == THINKING_TEXT
    first_text = next(i for i, f in enumerate(text.frames) if isinstance(f, TextDeltaFrame))
    assert text.frames.index(thought) < first_text
    (usage,) = text.of_type("session.usage")
    assert usage.payload.input_tokens == 100  # the scripted server's prompt tokens
    assert usage.payload.output_tokens

    assert tool_turn(allowed) == ("commandExecution", "allowed", False)
    assert (workspace / "allowed.txt").exists()
    assert tool_turn(changed) == ("fileChange", "allowed", False)
    assert (workspace / "notes.txt").read_text() == "hello from codex\n"
    (patch,) = changed.of_type(ToolInvokeRequestFrame)
    assert patch.payload.input["changes"][0]["kind"] == "add"
    assert tool_turn(declined) == ("commandExecution", "denied", True)
    assert tool_turn(timed_out) == ("commandExecution", "timed_out", True)
    assert not (workspace / "declined.txt").exists()
    assert not (workspace / "late.txt").exists()
    # a declined command is the model's to answer: the turn goes on
    assert (declined.stop_reason, timed_out.stop_reason) == ("end_turn", "end_turn")
    for turn in (allowed, changed, declined, timed_out):
        assert turn.of_type("session.usage")[0].payload.input_tokens == 200  # two model calls

    assert closed.payload.reason == "explicit"
    assert running, "the app-server carries the session's marker"
    assert not [p.pid for p in running if psutil.pid_exists(p.pid) and p.is_running()]
    assert session_processes(d.session.session_id) == []


async def test_a_steer_joins_the_running_turn_aborts_interrupt_it_and_a_failed_turn_ends_error(
    codex_bin: Path, llm: ScriptedResponses, tmp_path: Path
) -> None:
    adapter, workspace = make_adapter(codex_bin, llm, tmp_path)
    async with drive(adapter, workspace=workspace, policy=never_answer, timeout=TIMEOUT) as d:
        start = await d.start_prompt("SLOW_STREAM 60 50")  # 3 s to take the steer
        turn_id = start.payload.turn_id
        await d.wait_for(TextDeltaFrame, where=lambda f: f.payload.turn_id == turn_id)
        await d.send(d.control.steer("Say hello, steered."))
        steered = await d.wait_turn(turn_id)

        streaming, pending = await abort_streaming_then_pending(d)

        d.policy = allow_all
        failed = await d.prompt("HTTP_400")
        after = await d.prompt("Say hello.")

    assert steered.stop_reason == "end_turn"
    assert "tick" in steered.text
    assert DEFAULT_TEXT in steered.text
    assert not d.of_type(SessionErrorFrame)
    assert "Say hello, steered." in [last_user_text(r) for r in llm.requests]
    assert_aborted(streaming, pending, workspace)
    assert failed.stop_reason == "error"
    (error,) = failed.of_type(AgentErrorFrame)
    assert API_ERROR_MESSAGE in error.payload.message
    assert after.stop_reason == "end_turn"
    assert DEFAULT_TEXT in after.text
    assert "tick" not in after.text


async def test_models_are_listed_and_a_model_and_reasoning_effort_switch_takes_the_next_turn(
    codex_bin: Path, llm: ScriptedResponses, tmp_path: Path
) -> None:
    adapter, workspace = make_adapter(codex_bin, llm, tmp_path)
    async with drive(adapter, workspace=workspace, policy=allow_all, timeout=TIMEOUT) as d:
        await d.send(d.control.list_models())
        listed = await d.wait_for(ModelListFrame)
        await d.prompt("Say hello.")
        before = llm.requests[-1]
        await d.send(d.control.set_model(MODELS[1], thinking_level="high"))
        changed = await d.wait_for(ModelChangedFrame)
        await d.prompt("Say hello.")
        after = llm.requests[-1]
        mark = len(d.frames)
        await d.send(d.control.set_model("no-such-model"))
        unknown = await d.wait_for(SessionErrorFrame, after=mark)
        mark = len(d.frames)
        await d.send(d.control.set_model(thinking_level="extreme"))
        no_level = await d.wait_for(SessionErrorFrame, after=mark)
        mark = len(d.frames)
        await d.send(d.control.follow_up("then this"))
        follow_up = await d.wait_for(SessionErrorFrame, after=mark)

    (caps,) = d.of_type(SessionCapabilitiesFrame)
    assert caps.payload.features.model_list
    assert caps.payload.features.thinking_change
    assert caps.payload.agent is not None
    assert caps.payload.agent.model == MODELS[0]
    assert [m.id for m in listed.payload.models] == list(MODELS)
    assert (changed.payload.model, changed.payload.thinking_level) == (MODELS[1], "high")
    assert before["model"] == MODELS[0]
    assert after["model"] == MODELS[1]
    assert after["reasoning"]["effort"] == "high"
    assert unknown.payload.error_code == no_level.payload.error_code == "REJECTED"
    assert follow_up.payload.error_code == "UNSUPPORTED"


async def test_a_second_session_resumes_the_thread_with_its_history(
    codex_bin: Path, llm: ScriptedResponses, tmp_path: Path
) -> None:
    home = str(tmp_path / "codex-home")
    first, workspace = make_adapter(codex_bin, llm, tmp_path, codex_home=home)
    async with drive(first, workspace=workspace, timeout=TIMEOUT) as d:
        await d.prompt("Remember the word avocado.")
    assert isinstance(first, CodexAdapter)
    thread = first.thread_id
    assert thread

    again, workspace = make_adapter(
        codex_bin, llm, tmp_path, codex_home=home, resume_thread_id=thread
    )
    async with drive(again, workspace=workspace, timeout=TIMEOUT) as d:
        resumed = await d.prompt("Say hello.")
    assert isinstance(again, CodexAdapter)
    assert again.thread_id == thread
    assert resumed.stop_reason == "end_turn"
    assert DEFAULT_TEXT in resumed.text
    history = str(llm.requests[-1]["input"])
    assert "avocado" in history
    assert "Say hello." in history


async def test_an_app_server_that_cannot_start_fails_the_start_with_its_last_words(
    codex_bin: Path, llm: ScriptedResponses, tmp_path: Path
) -> None:
    missing = tmp_path / "no-such-catalog.json"
    adapter, workspace = make_adapter(codex_bin, llm, tmp_path)
    assert isinstance(adapter, CodexAdapter)
    broken = adapter.settings.model_copy(
        update={"config": {**adapter.settings.config, "model_catalog_json": str(missing)}}
    )
    async with drive(CodexAdapter(broken), workspace=workspace, timeout=TIMEOUT) as d:
        closed = await d.closed()
    (error,) = d.of_type(AgentErrorFrame)
    assert (error.payload.severity, error.payload.error_code) == ("fatal", "SPAWN_FAILED")
    assert "exited with code 1 before it was ready" in error.payload.message
    tail = error.payload.stderr_tail
    assert tail is not None
    assert "No such file or directory" in tail
    assert closed.payload.reason == "error"
    # the session's own CODEX_HOME (codex names it) is gone with it
    home = re.search(r'codex_home: AbsolutePathBuf\("([^"]+)"\)', tail)
    assert home is not None
    assert "rawp-codex-home-" in home.group(1)
    assert not await anyio.Path(home.group(1)).exists()


async def test_an_app_server_killed_mid_turn_ends_the_turn_and_the_session_with_its_signal(
    codex_bin: Path, llm: ScriptedResponses, tmp_path: Path
) -> None:
    adapter, workspace = make_adapter(codex_bin, llm, tmp_path)
    async with drive(adapter, workspace=workspace, timeout=TIMEOUT) as d:
        start = await d.start_prompt("SLOW_STREAM 400 50")
        turn_id = start.payload.turn_id
        await d.wait_for(TextDeltaFrame, where=lambda f: f.payload.turn_id == turn_id)
        (server,) = [
            p for p in session_processes(d.session.session_id) if p.cmdline()[1:2] == ["app-server"]
        ]
        server.kill()
        killed = await d.wait_turn(turn_id)
        closed = await d.closed()

    assert killed.stop_reason == "error"
    errors = d.of_type(AgentErrorFrame)
    assert [(e.payload.severity, e.payload.signal) for e in errors] == [("fatal", "SIGKILL")]
    assert closed.payload.reason == "agent_exit"
    assert session_processes(d.session.session_id) == []


async def test_a_manual_compaction_reports_the_context_it_compacted_and_the_thread_goes_on(
    codex_bin: Path, llm: ScriptedResponses, tmp_path: Path
) -> None:
    adapter, workspace = make_adapter(codex_bin, llm, tmp_path)
    async with drive(adapter, workspace=workspace, timeout=TIMEOUT) as d:
        await d.prompt("Say hello.")
        asked = len(llm.requests)
        await d.send(d.control.compact())
        compacted = await d.wait_for(SessionCompactedFrame)
        after = await d.prompt("Say hello.")
        mark = len(d.frames)
        await d.send(d.control.compact("keep the greetings"))
        refused = await d.wait_for(SessionErrorFrame, after=mark)

    assert (compacted.payload.trigger, compacted.payload.compacted) == ("manual", True)
    assert compacted.payload.tokens_before == 105  # the first turn's request: 100 in, 5 out
    assert len(llm.requests) == asked + 2  # the summary, then the next turn
    assert after.stop_reason == "end_turn"
    assert DEFAULT_TEXT in after.text
    assert refused.payload.error_code == "REJECTED"
