"""The process adapter against the real agents: omp 18.2.3 (Bun) and pi 0.73.1 (Node).

Both run offline against the scripted LLM of ``tests/support/llm_openai.py`` (one
server per module); ``scripts/install-peers`` installs them. Every frame stream is
checked against the DPS invariants when its session ends (``drive``).
"""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from rawp_adapters.frames import (
    AgentErrorFrame,
    InteractionRequestFrame,
    SessionCapabilitiesFrame,
    SessionCompactedFrame,
    ToolInvokeRequestFrame,
    ToolInvokeResultFrame,
    ToolInvokeStreamFrame,
)
from rawp_adapters.testing import (
    SessionDriver,
    TurnRecord,
    allow_all,
    deny_all,
    drive,
    never_answer,
)
from tests.process.helpers import running
from tests.process.real_peers import PEERS, TIMEOUT, only, peer_adapter
from tests.support.llm_openai import (
    CUT_STREAM,
    DEFAULT_TEXT,
    FAIL_FIRST,
    SUMMARY_TEXT,
    WRITE_FILE,
    WRITE_FILE_DEFAULT_CONTENT,
    ScriptedOpenAI,
)
from tests.support.peers import (
    OMP_VERSION,
    PI_VERSION,
    PeerName,
)

pytestmark = [pytest.mark.anyio, pytest.mark.peers]

BACKGROUND_SLEEP = "RUN_BASH sh -c 'sleep 300 >/dev/null 2>&1 & echo $!'"
"""A tool call that leaves an orphaned process behind and says its pid."""
QUICK_RETRIES = {"retry": {"maxRetries": 2, "baseDelayMs": 200, "provider": {"maxRetries": 0}}}
"""The agents' own retries of a failed model call, 2 of them from 200 ms (pi's HTTP
client retries nothing itself; omp's retries once, which ``FAIL_FIRST_2`` gets past)."""


@pytest.fixture(scope="module")
def llm() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI() as server:
        yield server


def agent_pid(session_id: str) -> int:
    """The pid of the agent process of that session (our child marked with its id)."""
    for child in psutil.Process().children():
        try:
            if child.environ().get("RAWP_SESSION_ID") == session_id:
                return child.pid
        except psutil.Error:
            continue
    raise AssertionError(f"no agent process for session {session_id}")


def tool_output(frames: list[Any]) -> str:
    (result,) = [f for f in frames if isinstance(f, ToolInvokeResultFrame)]
    output: str = result.payload.output
    return output


def started_pid(frames: list[Any]) -> int:
    match = re.search(r"\d+", tool_output(frames))
    assert match is not None
    return int(match.group())


async def stream_then(d: SessionDriver, text: str) -> str:
    """Start a prompt and return its turn id once it is streaming text."""
    start = await d.start_prompt(text)
    turn_id = start.payload.turn_id
    await d.wait_for("agent.text.delta", where=lambda f: f.payload.turn_id == turn_id)
    return turn_id


@pytest.mark.parametrize("name", PEERS)
async def test_text_bash_and_read_turns_then_an_end_that_leaves_no_tool_process(
    name: PeerName, llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    adapter, workspace = peer_adapter(name, llm, tmp_path)
    (workspace / "notes.txt").write_text("line one of notes\n", encoding="utf-8")
    async with drive(adapter, workspace=workspace, policy=allow_all, timeout=TIMEOUT) as d:
        text = await d.prompt("Say hello.")
        bash = await d.prompt("RUN_BASH echo hi")
        read = await d.prompt("READ_FILE notes.txt")
        background = await d.prompt(BACKGROUND_SLEEP)
        sleeper = started_pid(background.frames)
        assert running(sleeper)
        closed = await d.end()

    (caps,) = d.of_type(SessionCapabilitiesFrame)
    assert caps.payload.agent is not None
    assert (caps.payload.agent.name, caps.payload.adapter_type) == (name, "process")
    assert text.text == DEFAULT_TEXT
    assert text.stop_reason == "end_turn"
    (usage,) = text.of_type("session.usage")
    assert usage.payload.input_tokens == 100

    (request,) = bash.of_type(ToolInvokeRequestFrame)
    assert (request.payload.tool_name, request.payload.input) == ("bash", {"command": "echo hi"})
    (permission,) = bash.of_type(InteractionRequestFrame)
    assert permission.payload.interaction_type == "PERMISSION"
    assert permission.payload.context.tool_name == "bash"
    assert permission.payload.context.tool_call_id == request.payload.invocation_id
    assert "".join(f.payload.output for f in bash.of_type(ToolInvokeStreamFrame)).startswith("hi")
    (result,) = bash.of_type(ToolInvokeResultFrame)
    assert (result.payload.output_type, result.payload.is_error) == ("text", False)
    assert result.payload.output.startswith("hi\n")

    assert not read.of_type(InteractionRequestFrame)
    (read_result,) = read.of_type(ToolInvokeResultFrame)
    assert read_result.payload.output_type == "file_content"
    assert "line one of notes" in read_result.payload.output

    assert (closed.payload.reason, closed.payload.exit_code) == ("explicit", 0)
    assert not running(sleeper)


@pytest.mark.parametrize("name", PEERS)
async def test_session_capabilities_name_the_version_of_the_agent_that_runs(
    name: PeerName, llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    adapter, workspace = peer_adapter(name, llm, tmp_path)
    async with drive(adapter, workspace=workspace, timeout=TIMEOUT) as d:
        await d.end()
    (caps,) = d.of_type(SessionCapabilitiesFrame)
    assert caps.payload.agent is not None
    assert caps.payload.agent.version == (OMP_VERSION if name == "omp" else PI_VERSION)


@pytest.mark.parametrize("name", PEERS)
async def test_a_permission_lets_the_tool_run_only_on_an_explicit_allow(
    name: PeerName, llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    adapter, workspace = peer_adapter(name, llm, tmp_path, interaction_timeout_ms=1000)
    async with drive(adapter, workspace=workspace, policy=allow_all, timeout=TIMEOUT) as d:
        allowed = await d.prompt("RUN_BASH echo allowed > allowed.txt")
        d.policy = deny_all
        denied = await d.prompt("RUN_BASH echo denied > denied.txt")
        d.policy = never_answer
        timed_out = await d.prompt("RUN_BASH echo late > late.txt")

    for turn in (allowed, denied, timed_out):
        (request,) = turn.of_type(InteractionRequestFrame)
        assert request.payload.context.tool_name == "bash"
        assert turn.stop_reason == "end_turn"
    assert not allowed.of_type(ToolInvokeResultFrame)[0].payload.is_error
    assert denied.of_type(ToolInvokeResultFrame)[0].payload.is_error
    assert timed_out.of_type(ToolInvokeResultFrame)[0].payload.is_error
    assert (workspace / "allowed.txt").read_text() == "allowed\n"
    assert not (workspace / "denied.txt").exists()
    assert not (workspace / "late.txt").exists()


@pytest.mark.parametrize("name", PEERS)
async def test_the_permission_gate_matches_tool_names_in_any_case_and_a_star_gates_every_tool(
    name: PeerName, llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    upper, workspace = peer_adapter(name, llm, tmp_path / "upper", permission_tools=["BASH"])
    async with drive(upper, workspace=workspace, policy=deny_all, timeout=TIMEOUT) as d:
        bash = await d.prompt("RUN_BASH echo refused > refused.txt")
    (request,) = bash.of_type(InteractionRequestFrame)
    assert request.payload.context.tool_name == "bash"
    assert bash.of_type(ToolInvokeResultFrame)[0].payload.is_error
    assert not (workspace / "refused.txt").exists()

    every, workspace = peer_adapter(name, llm, tmp_path / "star", permission_tools="*")
    (workspace / "notes.txt").write_text("secret notes\n", encoding="utf-8")
    async with drive(every, workspace=workspace, policy=deny_all, timeout=TIMEOUT) as d:
        read = await d.prompt("READ_FILE notes.txt")
    (request,) = read.of_type(InteractionRequestFrame)
    assert request.payload.context.tool_name == "read"
    (result,) = read.of_type(ToolInvokeResultFrame)
    assert result.payload.is_error
    assert "secret notes" not in (result.payload.output or "")


@pytest.mark.parametrize("name", only("omp"))
async def test_omps_builtin_approval_mode_asks_for_permission(
    name: PeerName, llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    adapter, workspace = peer_adapter(name, llm, tmp_path, approval="omp-builtin")
    async with drive(adapter, workspace=workspace, policy=allow_all, timeout=TIMEOUT) as d:
        allowed = await d.prompt("RUN_BASH echo approved > approved.txt")
        d.policy = deny_all
        denied = await d.prompt("RUN_BASH echo refused > refused.txt")

    (request,) = allowed.of_type(InteractionRequestFrame)
    (call,) = allowed.of_type(ToolInvokeRequestFrame)
    assert request.payload.interaction_type == "PERMISSION"
    assert request.payload.context.tool_name == "bash"
    assert request.payload.context.tool_call_id == call.payload.invocation_id
    assert request.payload.context.tool_input == {"command": "echo approved > approved.txt"}
    assert (workspace / "approved.txt").read_text() == "approved\n"
    assert denied.of_type(ToolInvokeResultFrame)[0].payload.is_error
    assert not (workspace / "refused.txt").exists()


@pytest.mark.parametrize("name", only("omp"))
async def test_omps_builtin_approval_asks_before_a_write_and_not_for_a_tool_left_off_the_list(
    name: PeerName, llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    adapter, workspace = peer_adapter(name, llm, tmp_path, approval="omp-builtin")
    async with drive(adapter, workspace=workspace, policy=deny_all, timeout=TIMEOUT) as d:
        refused = await d.prompt(f"{WRITE_FILE} refused.txt")
    bash_only, other = peer_adapter(
        name, llm, tmp_path / "bash-only", approval="omp-builtin", permission_tools=["bash"]
    )
    async with drive(bash_only, workspace=other, policy=deny_all, timeout=TIMEOUT) as d:
        unasked = await d.prompt(f"{WRITE_FILE} unasked.txt")

    (request,) = refused.of_type(InteractionRequestFrame)
    assert request.payload.context.tool_name == "write"
    assert refused.of_type(ToolInvokeResultFrame)[0].payload.is_error
    assert not (workspace / "refused.txt").exists()
    assert not unasked.of_type(InteractionRequestFrame)
    assert (other / "unasked.txt").read_text() == WRITE_FILE_DEFAULT_CONTENT


@pytest.mark.parametrize("name", PEERS)
async def test_abort_mid_stream_then_compaction_and_the_session_goes_on(
    name: PeerName, llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    adapter, workspace = peer_adapter(name, llm, tmp_path)
    async with drive(adapter, workspace=workspace, timeout=TIMEOUT) as d:
        early = await d.start_prompt("SLOW_STREAM 200 50")
        await d.send(d.control.abort(early.payload.turn_id))
        aborted_early = await d.wait_turn(early.payload.turn_id, timeout=10)
        turn_id = await stream_then(d, "SLOW_STREAM 200 50")
        await d.send(d.control.abort(turn_id))
        aborted = await d.wait_turn(turn_id, timeout=10)
        mark = len(d.frames)
        await d.send(d.control.compact())
        compacted = await d.wait_for(SessionCompactedFrame, after=mark)
        after = await d.prompt("Say hello.")

    assert aborted_early.stop_reason == aborted.stop_reason == "cancelled"
    assert len(aborted.of_type("agent.text.delta")) < 200
    assert not d.of_type(AgentErrorFrame)
    assert compacted.payload.trigger == "manual"
    assert compacted.payload.summary is not None
    assert SUMMARY_TEXT.splitlines()[0] in compacted.payload.summary
    assert after.text == DEFAULT_TEXT


@pytest.mark.parametrize("name", PEERS)
async def test_a_compaction_with_nothing_to_compact_is_answered_as_such_not_as_a_failure(
    name: PeerName, llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    """The second of two compactions in a row finds the context already compacted."""
    adapter, workspace = peer_adapter(name, llm, tmp_path)
    async with drive(adapter, workspace=workspace, timeout=TIMEOUT) as d:
        await d.prompt("Say hello.")
        answers = []
        for _ in range(2):
            mark = len(d.frames)
            await d.send(d.control.compact())
            answers.append(await d.wait_for(SessionCompactedFrame, after=mark))
            await d.wait_for(
                "agent.state.changed",
                where=lambda f: f.payload.state == "idle",
                after=d.frames.index(answers[-1]),
            )
        after = await d.prompt("Say hello.")

    assert [answer.payload.compacted for answer in answers] == [True, False]
    assert not d.of_type(AgentErrorFrame)
    assert after.text == DEFAULT_TEXT


def frames_between(d: SessionDriver, first: TurnRecord, second: TurnRecord) -> list[str]:
    """The frames after ``first`` ended and before ``second`` started (but the session's
    own ``agent.state.changed``)."""
    start = d.frames.index(first.end) + 1
    gap = d.frames[start : d.frames.index(second.frames[0])]
    return [frame.type for frame in gap if frame.type != "agent.state.changed"]


@pytest.mark.parametrize("name", PEERS)
async def test_a_turn_stays_open_while_the_agent_retries_a_failed_model_call(
    name: PeerName, llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    adapter, workspace = peer_adapter(name, llm, tmp_path, QUICK_RETRIES)
    flaky = f"{FAIL_FIRST}_2_CUT ({tmp_path.name})"  # its own failures on the shared server
    async with drive(adapter, workspace=workspace, timeout=TIMEOUT) as d:
        retried = await d.prompt(flaky)
        after = await d.prompt("Say hello.")

    assert retried.stop_reason == "end_turn"
    assert retried.text.endswith(DEFAULT_TEXT)
    warnings = retried.of_type(AgentErrorFrame)
    assert warnings
    assert all(w.payload.severity == "warning" for w in warnings)
    assert "the agent retries it in" in warnings[0].payload.message
    assert frames_between(d, retried, after) == []
    assert (after.stop_reason, after.text) == ("end_turn", DEFAULT_TEXT)
    assert not after.of_type(AgentErrorFrame)


@pytest.mark.parametrize("name", PEERS)
async def test_retries_that_give_up_end_their_turn_with_an_error_and_leave_the_next_alone(
    name: PeerName, llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    adapter, workspace = peer_adapter(name, llm, tmp_path, QUICK_RETRIES)
    async with drive(adapter, workspace=workspace, timeout=TIMEOUT) as d:
        failed = await d.prompt(CUT_STREAM)
        after = await d.prompt("Say hello.")

    assert failed.stop_reason == "error"
    errors = failed.of_type(AgentErrorFrame)
    # One warning per retry (QUICK_RETRIES: 2), then the error the last attempt ended with.
    assert [e.payload.severity for e in errors] == ["warning", "warning", "error"]
    assert frames_between(d, failed, after) == []
    assert (after.stop_reason, after.text) == ("end_turn", DEFAULT_TEXT)
    assert not after.of_type(AgentErrorFrame)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name)
@pytest.mark.parametrize("name", PEERS)
async def test_a_signal_mid_stream_ends_turn_and_session_and_kills_the_tools(
    name: PeerName, llm: ScriptedOpenAI, tmp_path: Path, sig: signal.Signals
) -> None:
    adapter, workspace = peer_adapter(name, llm, tmp_path)
    async with drive(adapter, workspace=workspace, timeout=TIMEOUT) as d:
        sleeper = started_pid((await d.prompt(BACKGROUND_SLEEP)).frames)
        turn_id = await stream_then(d, "SLOW_STREAM 200 50")
        os.kill(agent_pid(d.session.session_id), sig)
        turn = await d.wait_turn(turn_id)
        closed = await d.closed()

    (error,) = turn.of_type(AgentErrorFrame)
    assert (error.payload.severity, error.payload.error_code) == ("fatal", "SIGNAL_EXIT")
    assert error.payload.signal == sig.name
    assert turn.stop_reason == "error"
    assert closed.payload.reason == "agent_exit"
    assert closed.payload.signal == sig.name
    assert closed.payload.exit_code == (143 if sig == signal.SIGTERM else None)
    assert not running(sleeper)
