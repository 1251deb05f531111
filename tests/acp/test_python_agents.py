"""The ACP adapter against the ACP agents that ship on PyPI, each in a venv of its own
(``scripts/install-acp-python``), offline against the scripted chat completions server:
Mistral Vibe (``vibe-acp``) and fast-agent (``fast-agent acp``), on trio only. Every
frame stream is checked against the DPS invariants (``drive``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rawp_adapters import AgentMetadata, create_adapter
from rawp_adapters.frames import (
    InteractionRequestFrame,
    InteractionResolvedFrame,
    ModelChangedFrame,
    ModelListFrame,
    SessionCapabilitiesFrame,
    SessionErrorFrame,
    ToolCatalogUpdatedFrame,
    ToolInvokeRequestFrame,
)
from rawp_adapters.testing import KIT_HOST_TOOL, allow_all, deny_all, drive, never_answer
from tests.acp.python_agents import (
    FAST_AGENT_MCP,
    FAST_AGENT_MODEL,
    SECOND_VIBE_MODEL,
    PythonAcpAgent,
    fast_agent_command,
    program_path,
    python_acp_available,
    python_acp_settings,
)
from tests.acp.readme_check import assert_readme_check_passes
from tests.acp.test_real_acp_agents import assert_thinking_first, marked
from tests.support.aborts import abort_streaming_then_pending, assert_aborted
from tests.support.llm_openai import DEFAULT_TEXT, ScriptedOpenAI
from tests.support.mcp_server import TOOL, http_server, stamped

pytestmark = pytest.mark.acp

TIMEOUT = 90.0


@pytest.fixture
def anyio_backend() -> str:
    """One event loop: how the adapter runs on each does not depend on the agent (the
    agents of ``test_real_acp_agents`` prove both), and every start of vibe costs seconds."""
    return "trio"


def installed(name: PythonAcpAgent) -> pytest.MarkDecorator:
    return pytest.mark.skipif(
        not python_acp_available(name),
        reason=f"{name} is not installed: run scripts/install-acp-python",
    )


def make_adapter(
    name: PythonAcpAgent, llm: ScriptedOpenAI, home: Path, **extra: Any
) -> tuple[Any, Path]:
    settings, workspace = python_acp_settings(name, base_url=llm.base_url, home=home, **extra)
    metadata = AgentMetadata(adapter_type="process", settings={"protocol": "acp", **settings})
    return create_adapter(metadata), workspace


@pytest.fixture
def llm() -> Iterator[ScriptedOpenAI]:
    """A server of the test's own: what it asserts of the requests is the test's alone."""
    with ScriptedOpenAI() as server:
        yield server


@installed("vibe")
@pytest.mark.anyio
async def test_vibe_thinks_answers_runs_bash_allowed_denied_and_timed_out_and_leaves_nothing(
    llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    adapter, workspace = make_adapter("vibe", llm, tmp_path, interaction_timeout_ms=1500)
    async with drive(adapter, workspace=workspace, policy=allow_all, timeout=TIMEOUT) as d:
        text = await d.prompt("THINK_FIRST Say hello.")
        allowed = await d.prompt("RUN_BASH touch allowed.txt")
        d.policy = deny_all
        denied = await d.prompt("RUN_BASH touch denied.txt")
        d.policy = never_answer
        timed_out = await d.prompt("RUN_BASH touch late.txt")
        closed = await d.end()

    (caps,) = d.of_type(SessionCapabilitiesFrame)
    agent = caps.payload.agent
    assert agent is not None
    assert (agent.name, agent.version) == ("vibe", "3.0.3")
    assert caps.payload.features.permission_requests
    assert caps.payload.features.thinking
    assert caps.payload.features.process_containment is not None
    assert text.stop_reason == "end_turn"
    assert DEFAULT_TEXT in text.text
    assert_thinking_first(text)
    assert text.of_type("session.usage")[0].payload.input_tokens
    assert (workspace / "allowed.txt").exists()
    assert not (workspace / "denied.txt").exists()
    assert not (workspace / "late.txt").exists()
    outcomes = []
    for turn in (allowed, denied, timed_out):
        (request,) = turn.of_type(InteractionRequestFrame)
        assert request.payload.context is not None
        assert request.payload.context.tool_name == "execute"
        calls = {c.payload.invocation_id for c in turn.of_type(ToolInvokeRequestFrame)}
        assert request.payload.context.tool_call_id in calls
        (resolved,) = turn.of_type(InteractionResolvedFrame)
        outcomes.append(resolved.payload.outcome)
        assert turn.stop_reason == "end_turn"
    assert outcomes == ["allowed", "denied", "timed_out"]
    assert closed.payload.reason == "explicit"
    assert marked(d.session.session_id) == []
    assert llm.violations == []


@installed("vibe")
@pytest.mark.anyio
async def test_vibe_aborted_while_streaming_and_while_a_permission_waits_then_answers_again(
    llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    adapter, workspace = make_adapter("vibe", llm, tmp_path)
    async with drive(adapter, workspace=workspace, policy=never_answer, timeout=TIMEOUT) as d:
        streaming, pending = await abort_streaming_then_pending(d)

        d.policy = allow_all
        after = await d.prompt("Say hello.")

    assert_aborted(streaming, pending, workspace)
    assert after.stop_reason == "end_turn"
    assert DEFAULT_TEXT in after.text


@installed("vibe")
@pytest.mark.anyio
async def test_a_second_vibe_session_resumes_the_first_with_its_history(
    llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    first, workspace = make_adapter("vibe", llm, tmp_path)
    async with drive(first, workspace=workspace, timeout=TIMEOUT) as d:
        await d.prompt("Say hello.")
    acp_session = first.acp_session_id
    assert acp_session

    again, workspace = make_adapter("vibe", llm, tmp_path, resume_session_id=acp_session)
    async with drive(again, workspace=workspace, timeout=TIMEOUT) as d:
        resumed = await d.prompt("Say hello again.")
    history = [(m["role"], m["content"]) for m in llm.requests[-1]["messages"]]
    assert again.acp_session_id == acp_session
    assert resumed.stop_reason == "end_turn"
    assert DEFAULT_TEXT in resumed.text
    assert ("assistant", DEFAULT_TEXT) in history
    assert history[-1] == ("user", "Say hello again.")


@installed("vibe")
@pytest.mark.anyio
async def test_vibe_lists_its_models_switches_to_another_and_keeps_it_over_an_unknown_one(
    llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    alias, model = SECOND_VIBE_MODEL
    adapter, workspace = make_adapter("vibe", llm, tmp_path)
    async with drive(adapter, workspace=workspace, timeout=TIMEOUT) as d:
        await d.send(d.control.list_models())
        listed = await d.wait_for(ModelListFrame)
        await d.send(d.control.set_model(alias))
        changed = await d.wait_for(ModelChangedFrame)
        await d.prompt("Say hello.")
        mark = len(d.frames)
        await d.send(d.control.set_model("no-such-model"))
        unknown = await d.wait_for(SessionErrorFrame, after=mark)
        await d.prompt("Say hello.")
    asked = [request.body["model"] for request in llm.log]
    (caps,) = d.of_type(SessionCapabilitiesFrame)
    assert (caps.payload.features.model_change, caps.payload.features.model_list) == (True, True)
    assert listed.payload.current == "fake"
    assert alias in [m.id for m in listed.payload.models]
    assert changed.payload.model == alias
    assert unknown.payload.error_code == "REJECTED"
    assert asked == [model, model]


@installed("vibe")
def test_the_readmes_acp_check_of_vibe_passes_against_the_scripted_model(
    tmp_path: Path,
) -> None:
    """The README's line as printed, ``vibe-acp`` on the PATH, in a home of its own."""
    assert_readme_check_passes("vibe-acp", program_path("vibe").parent, tmp_path)


def stamp(text: str) -> str:
    """The prompt that makes the scripted model call the MCP tool of fast-agent's session."""
    return f"CALL_TOOL {FAST_AGENT_MCP}__{TOOL} " + json.dumps({"text": text})


def sent_to_model(llm: ScriptedOpenAI) -> str:
    return json.dumps(llm.requests)


@pytest.fixture
def kit_mcp() -> Iterator[list[dict[str, str]]]:
    """fast-agent's MCP server, as the ``mcp_servers`` setting: fast-agent asks before the
    tools of MCP servers only. Over HTTP, started once: fast-agent gives a session's stdio
    server 10 s to start, which a loaded machine can take."""
    with http_server() as url:
        yield [{"name": FAST_AGENT_MCP, "url": url}]


@installed("fast-agent")
@pytest.mark.anyio
async def test_fast_agent_asks_before_mcp_tools_not_its_shell_thinks_aborts_resumes_leaves_nothing(
    llm: ScriptedOpenAI, kit_mcp: list[dict[str, str]], tmp_path: Path
) -> None:
    """One start of the agent for most of its row (each costs seconds), its tool the
    session's MCP ``stamp``; the second start resumes the first session, with its own
    shell (``--shell``), which it runs without asking."""
    adapter, workspace = make_adapter(
        "fast-agent", llm, tmp_path, interaction_timeout_ms=2000, mcp_servers=kit_mcp
    )
    async with drive(adapter, workspace=workspace, policy=allow_all, timeout=TIMEOUT) as d:
        text = await d.prompt("THINK_FIRST Say hello.")
        allowed = await d.prompt(stamp("allowed"))
        d.policy = deny_all
        denied = await d.prompt(stamp("denied"))
        d.policy = never_answer
        timed_out = await d.prompt(stamp("late"))
        streaming, pending = await abort_streaming_then_pending(d, stamp("never"))
        d.policy = allow_all
        after = await d.prompt("Say hello.")
        closed = await d.end()

    (caps,) = d.of_type(SessionCapabilitiesFrame)
    agent = caps.payload.agent
    assert agent is not None
    assert (agent.name, agent.version) == ("fast-agent", "0.10.48")
    assert caps.payload.features.permission_requests
    assert caps.payload.features.mcp_servers == [FAST_AGENT_MCP]
    assert text.stop_reason == "end_turn"
    assert DEFAULT_TEXT in text.text
    assert_thinking_first(text)
    # no token counts: only a status line of text in its messages' _meta
    assert text.of_type("session.usage")[0].payload.input_tokens is None
    assert stamped("allowed") in allowed.text
    outcomes = []
    for turn in (allowed, denied, timed_out):
        (request,) = turn.of_type(InteractionRequestFrame)
        assert request.payload.context is not None
        # it names no tool: the call's ACP kind, and "<server>/<tool>" as its title
        assert request.payload.context.tool_name == "other"
        assert request.payload.title == f"{FAST_AGENT_MCP}/{TOOL}"
        calls = {c.payload.invocation_id for c in turn.of_type(ToolInvokeRequestFrame)}
        assert request.payload.context.tool_call_id in calls
        (resolved,) = turn.of_type(InteractionResolvedFrame)
        outcomes.append(resolved.payload.outcome)
        assert turn.stop_reason == "end_turn"
    assert outcomes == ["allowed", "denied", "timed_out"]
    assert_aborted(streaming, pending, workspace)
    assert DEFAULT_TEXT in after.text
    for never_ran in ("denied", "late", "never"):
        assert stamped(never_ran) not in sent_to_model(llm)
    assert closed.payload.reason == "explicit"
    assert marked(d.session.session_id) == []

    acp_session = adapter.acp_session_id
    again, workspace = make_adapter(
        "fast-agent",
        llm,
        tmp_path,
        resume_session_id=acp_session,
        mcp_servers=kit_mcp,
        command=fast_agent_command("--shell"),
    )
    async with drive(again, workspace=workspace, policy=deny_all, timeout=TIMEOUT) as d:
        resumed = await d.prompt("Say hello again.")
        history = json.dumps(llm.requests[-1]["messages"])
        unasked = await d.prompt("RUN_BASH touch unasked.txt")
    assert again.acp_session_id == acp_session
    assert resumed.stop_reason == "end_turn"
    assert stamped("allowed") in history
    assert llm.requests[-1]["model"] == FAST_AGENT_MODEL
    assert unasked.of_type(InteractionRequestFrame) == []
    assert (workspace / "unasked.txt").exists()
    assert marked(d.session.session_id) == []
    assert llm.violations == []


@installed("fast-agent")
@pytest.mark.anyio
async def test_fast_agents_call_of_a_host_tool_goes_to_the_master_once_and_unasked(
    llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    """The Master's host tools as the session's ``rawp`` MCP server: fast-agent asks before
    their call too (titled ``rawp/kit_echo``), which is the adapter's to allow, and the
    call is reported once, as the Master's."""
    adapter, workspace = make_adapter("fast-agent", llm, tmp_path, host_tools=True)
    async with drive(adapter, workspace=workspace, policy=deny_all, timeout=TIMEOUT) as d:
        await d.send(d.control.publish_tools([KIT_HOST_TOOL]))
        published = await d.wait_for(ToolCatalogUpdatedFrame)
        start = await d.start_prompt('CALL_TOOL rawp__kit_echo {"message": "hi"}')
        call = await d.wait_for(ToolInvokeRequestFrame)
        await d.send(d.control.tool_result(call.payload.invocation_id, "kit says hello"))
        turn = await d.wait_turn(start.payload.turn_id)
    (caps,) = d.of_type(SessionCapabilitiesFrame)
    assert caps.payload.features.host_tools
    assert published.payload.tools == ["kit_echo"]
    assert (call.payload.executor, call.payload.tool_name) == ("master", "kit_echo")
    assert call.payload.input == {"message": "hi"}
    assert turn.of_type(ToolInvokeRequestFrame) == [call]
    assert turn.of_type(InteractionRequestFrame) == []
    assert turn.stop_reason == "end_turn"
    assert "kit says hello" in turn.text
    assert llm.violations == []


@installed("fast-agent")
def test_the_readmes_acp_check_of_fast_agent_passes_against_the_scripted_model(
    tmp_path: Path,
) -> None:
    """The README's line as printed, ``fast-agent`` on the PATH, in a home of its own; the
    MCP server it names is this test's."""
    with http_server() as url:
        assert_readme_check_passes(
            "fast-agent", program_path("fast-agent").parent, tmp_path, mcp_url=url
        )
