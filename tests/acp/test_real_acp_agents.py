"""The ACP adapter against real ACP agents, offline, each against the project's
scripted model server on 127.0.0.1 (see ``tests/acp/agents.py`` and
``scripts/install-acp-peers``). One session per scenario group keeps them lean:

- a thinking + text turn, a tool call allowed / denied / left to its deadline, an explicit end
  that leaves no process behind;
- an abort while text streams and while a permission is pending, then a turn that
  gets its own answer (claude-agent-acp's off-by-one after a cancel absorbed);
- resume with ``session/load`` in a second session, where the agent can.

Every frame stream is checked against the DPS invariants (``drive``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psutil
import pytest

from rawp_adapters import AgentMetadata, create_adapter
from rawp_adapters.frames import (
    InteractionRequestFrame,
    InteractionResolvedFrame,
    SessionCapabilitiesFrame,
    TextDeltaFrame,
    TextDoneFrame,
    ThinkingDeltaFrame,
    ThinkingDoneFrame,
    ToolInvokeRequestFrame,
)
from rawp_adapters.testing import TurnRecord, allow_all, deny_all, drive, never_answer
from tests.acp.agents import ACP_AGENTS, AcpAgentName, acp_available, acp_settings, wire_format
from tests.acp.overtake import OVERTAKE_BASH
from tests.support.aborts import abort_streaming_then_pending, assert_aborted
from tests.support.llm_openai import DEFAULT_TEXT, THINKING_TEXT

pytestmark = [pytest.mark.anyio, pytest.mark.acp]

TIMEOUT = 90.0
"""Bound of every wait on a real agent (qwen and gemini start in 1-2 s, slower under load)."""

AGENTS = [
    pytest.param(
        name,
        marks=pytest.mark.skipif(
            not acp_available(name),
            reason=f"{name} is not installed: run scripts/install-acp-peers",
        ),
    )
    for name in ACP_AGENTS
]

ONE_LOOP = {"opencode": "trio", "copilot": "asyncio"}
"""Agents whose scenarios run on one event loop only: how the adapter runs on each loop
does not depend on the agent (the others prove both), and these two start slowly."""


@pytest.fixture(autouse=True)
def one_loop(request: pytest.FixtureRequest, anyio_backend: str) -> None:
    name = request.node.callspec.params.get("name")
    if ONE_LOOP.get(name, anyio_backend) != anyio_backend:
        pytest.skip(f"{name} runs these scenarios on {ONE_LOOP[name]} only")


SHELL_TOOL = {
    "omp": "execute",
    "claude": "Bash",
    "qwen": "run_shell_command",
    "codex": "execute",
    "gemini": "execute",
}
"""``context.tool_name`` of the agents' shell tool (claude-agent-acp and qwen-code name
their tools; the others give the ACP kind)."""


def make_adapter(
    name: AcpAgentName,
    servers: dict[str, str],
    home: Path,
    env: dict[str, str] | None = None,
    **extra: Any,
) -> tuple[Any, Path]:
    """The adapter running ``name`` (``env`` added to its environment), and its workspace."""
    fmt = wire_format(name)
    if fmt not in servers:
        pytest.skip(f"no scripted {fmt} server")
    settings, workspace = acp_settings(name, llm_url=servers[fmt], home=home, **extra)
    settings["env"].update(env or {})
    metadata = AgentMetadata(adapter_type="process", settings={"protocol": "acp", **settings})
    return create_adapter(metadata), workspace


def marked(session_id: str) -> list[int]:
    """Processes still carrying this session's marker."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get("RAWP_SESSION_ID") == session_id:
                found.append(proc.pid)
        except psutil.Error:
            continue
    return found


@pytest.mark.parametrize("name", AGENTS)
async def test_thinking_text_a_tool_allowed_denied_and_timed_out_then_an_end_leaving_nothing(
    name: AcpAgentName, servers: dict[str, str], tmp_path: Path
) -> None:
    adapter, workspace = make_adapter(name, servers, tmp_path, interaction_timeout_ms=1500)
    async with drive(adapter, workspace=workspace, policy=allow_all, timeout=TIMEOUT) as d:
        text = await d.prompt("THINK_FIRST Say hello.")
        allowed = await d.prompt("RUN_BASH touch allowed.txt")
        d.policy = deny_all
        denied = await d.prompt("RUN_BASH touch denied.txt")
        d.policy = never_answer
        timed_out = await d.prompt("RUN_BASH touch late.txt")
        closed = await d.end()

    (caps,) = d.of_type(SessionCapabilitiesFrame)
    assert caps.payload.adapter_type == "process"
    assert caps.payload.features.permission_requests
    assert caps.payload.features.process_containment is not None
    assert caps.payload.features.thinking
    assert text.stop_reason == "end_turn"
    assert DEFAULT_TEXT in text.text or "Hello" in text.text
    assert (workspace / "allowed.txt").exists()
    assert not (workspace / "denied.txt").exists()
    assert not (workspace / "late.txt").exists()
    outcomes = []
    for turn in (allowed, denied, timed_out):
        (request,) = turn.of_type(InteractionRequestFrame)
        assert request.payload.context is not None
        assert request.payload.context.tool_name == SHELL_TOOL.get(name, "execute")
        calls = {c.payload.invocation_id for c in turn.of_type(ToolInvokeRequestFrame)}
        assert request.payload.context.tool_call_id in calls
        (resolved,) = turn.of_type(InteractionResolvedFrame)
        outcomes.append(resolved.payload.outcome)
    assert outcomes == ["allowed", "denied", "timed_out"]
    # codex-acp's reject ("abort") ends the whole turn cancelled; the others carry on
    refused_stop = "cancelled" if name == "codex" else "end_turn"
    assert (denied.stop_reason, timed_out.stop_reason) == (refused_stop, refused_stop)
    usage = text.of_type("session.usage")
    if name in REPORTS_TOKENS:
        assert usage[0].payload.input_tokens
    if name == "claude":  # its usage_update has used: null, which the SDK would drop
        assert usage[0].payload.cost_usd is not None
    assert closed.payload.reason == "explicit"
    assert marked(d.session.session_id) == []
    assert_thinking_first(text)


@pytest.mark.parametrize("name", [p for p in AGENTS if p.values[0] == "claude"])
async def test_claude_s_shell_tool_is_bash_when_its_permission_request_overtakes_the_tool_call(
    name: AcpAgentName, servers: dict[str, str], tmp_path: Path
) -> None:
    adapter, workspace = make_adapter(name, servers, tmp_path)
    async with drive(adapter, workspace=workspace, policy=allow_all, timeout=TIMEOUT) as d:
        turn = await d.prompt(f"{OVERTAKE_BASH} touch allowed.txt")
    (request,) = turn.of_type(InteractionRequestFrame)
    (invoked,) = turn.of_type(ToolInvokeRequestFrame)
    assert request.payload.context is not None
    assert (request.payload.context.tool_name, invoked.payload.tool_name) == ("Bash", "Bash")
    assert request.payload.context.tool_call_id == invoked.payload.invocation_id
    assert (workspace / "allowed.txt").exists()


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("name", [p for p in AGENTS if p.values[0] == "claude"])
async def test_claude_agent_acp_without_a_default_mode_never_asks_before_a_command(
    name: AcpAgentName, servers: dict[str, str], tmp_path: Path
) -> None:
    """Why the tests name ``permissions.defaultMode`` (specs/acp.md): without it
    claude-agent-acp 0.101.0 starts in ``auto``, where a classifier model request decides
    and the Master is never asked."""
    adapter, workspace = make_adapter(name, servers, tmp_path)
    (tmp_path / ".claude" / "settings.json").unlink()
    async with drive(adapter, workspace=workspace, policy=deny_all, timeout=TIMEOUT) as d:
        turn = await d.prompt("RUN_BASH touch unasked.txt")
    assert turn.stop_reason == "end_turn"
    assert turn.of_type(ToolInvokeRequestFrame)
    assert turn.of_type(InteractionRequestFrame) == []


@pytest.mark.parametrize("name", [p for p in AGENTS if p.values[0] == "qwen"])
async def test_qwen_asks_before_it_writes_a_file_and_a_denied_write_leaves_none(
    name: AcpAgentName, servers: dict[str, str], tmp_path: Path
) -> None:
    """QwenLM/qwen-code#11887 reports qwen 0.23 running writes and commands over ACP
    without ever asking; 0.24.4 in ``--approval-mode default`` asks for both (the shell
    in the test above)."""
    adapter, workspace = make_adapter(name, servers, tmp_path)
    write = {"file_path": str(workspace / "denied.txt"), "content": "hi"}
    async with drive(adapter, workspace=workspace, policy=deny_all, timeout=TIMEOUT) as d:
        turn = await d.prompt(f"CALL_TOOL write_file {json.dumps(write)}")
    (request,) = turn.of_type(InteractionRequestFrame)
    assert request.payload.context is not None
    assert request.payload.context.tool_name == "write_file"
    (resolved,) = turn.of_type(InteractionResolvedFrame)
    assert resolved.payload.outcome == "denied"
    assert not (workspace / "denied.txt").exists()


def assert_thinking_first(turn: TurnRecord) -> None:
    """``THINK_FIRST`` makes every scripted server reason first (Anthropic thinking block,
    chat ``reasoning_content``, a Responses reasoning summary, Gemini ``thought`` parts); each
    agent forwards it as ``agent_thought_chunk``, streamed before the answer, done once."""
    deltas = turn.of_type(ThinkingDeltaFrame)
    (done,) = turn.of_type(ThinkingDoneFrame)
    assert "".join(f.payload.text for f in deltas) == done.payload.text
    # gemini-cli formats each thought as "**subject**\ndescription" and trims it
    assert _words(THINKING_TEXT) in _words(done.payload.text.replace("*", ""))
    # codex warns "Model metadata for `fake-model` not found" as text first; the answer's own
    # text block comes after the thinking
    (answer,) = [f for f in turn.of_type(TextDoneFrame) if DEFAULT_TEXT in f.payload.text]
    first_answer_delta = next(
        i
        for i, f in enumerate(turn.frames)
        if isinstance(f, TextDeltaFrame) and f.payload.index == answer.payload.index
    )
    assert turn.frames.index(done) < first_answer_delta


@pytest.mark.parametrize("name", AGENTS)
async def test_abort_while_streaming_and_while_a_permission_waits_then_turns_stay_aligned(
    name: AcpAgentName, servers: dict[str, str], tmp_path: Path
) -> None:
    adapter, workspace = make_adapter(name, servers, tmp_path)
    async with drive(adapter, workspace=workspace, policy=never_answer, timeout=TIMEOUT) as d:
        streaming, pending = await abort_streaming_then_pending(d)

        d.policy = allow_all
        after = await d.prompt("Say hello.")

    assert_aborted(streaming, pending, workspace)
    assert after.stop_reason == "end_turn"
    assert "Hello" in after.text
    assert "tick" not in after.text


REPORTS_TOKENS = ("omp", "claude", "codex", "gemini", "opencode", "copilot")
"""Agents that report the turn's tokens: ``PromptResponse.usage`` (omp, claude, codex-acp
2.6.0, opencode, the Copilot CLI) or ``_meta.quota.token_count`` (gemini); qwen nothing."""

CANNOT_LOAD = {
    "gemini": "gemini-cli 0.61.0 answers session/load with -32603 'No previous sessions found "
    "for this project.' although the chat file exists (peer/ACP.md), so it cannot resume",
}
RESUMABLE = [
    pytest.param(name, marks=[*p.marks, pytest.mark.skip(reason=CANNOT_LOAD[name])])
    if (name := str(p.values[0])) in CANNOT_LOAD
    else p
    for p in AGENTS
]


@pytest.mark.parametrize("name", RESUMABLE)
async def test_a_second_session_resumes_the_first_with_session_load(
    name: AcpAgentName, servers: dict[str, str], tmp_path: Path
) -> None:
    first, workspace = make_adapter(name, servers, tmp_path)
    async with drive(first, workspace=workspace, timeout=TIMEOUT) as d:
        await d.prompt("Say hello.")
    acp_session = first.acp_session_id
    assert acp_session

    again, workspace = make_adapter(name, servers, tmp_path, resume_session_id=acp_session)
    async with drive(again, workspace=workspace, timeout=TIMEOUT) as d:
        resumed = await d.prompt("Say hello.")
    assert again.acp_session_id == acp_session
    assert resumed.stop_reason == "end_turn"
    assert "Hello" in resumed.text


def _words(text: str) -> str:
    return "".join(text.split())
