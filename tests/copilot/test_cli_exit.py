"""The Copilot CLI dying mid-turn (killed): the turn ends ``error`` promptly with an
``agent.error`` naming the exit, any open question is resolved, and the session closes
with that fatal error (the SDK does not restart its CLI)."""

from __future__ import annotations

import signal
from pathlib import Path

import psutil
import pytest

from rawp_adapters.frames import (
    AgentErrorFrame,
    InteractionRequestFrame,
    SessionClosedFrame,
    ToolInvokeResultFrame,
)
from rawp_adapters.testing import never_answer
from tests.copilot.sessions import WRITE_PROMPT, copilot_session
from tests.support.core_scenarios import host_call_started
from tests.support.llm_openai import ScriptedOpenAI

pytestmark = pytest.mark.anyio

ENDS_WITHIN_S = 10.0
"""Well under the scripted stream's 10 s and the driver's 60 s: the turn does not wait
for an idle the dead CLI will never send."""


def kill_cli() -> None:
    """SIGKILL the Copilot CLI the SDK started (a child of this process)."""
    (cli,) = [p for p in psutil.Process().children() if "copilot" in " ".join(p.cmdline())]
    cli.send_signal(signal.SIGKILL)


async def test_a_cli_killed_while_streaming_ends_the_turn_with_an_error_and_the_session(
    llm: ScriptedOpenAI, copilot_cli: Path, tmp_path: Path
) -> None:
    async with copilot_session(llm, copilot_cli, tmp_path) as d:
        start = await d.start_prompt("SLOW_STREAM 200 50")
        await d.wait_for("agent.text.delta")
        kill_cli()
        turn = await d.wait_turn(start.payload.turn_id, timeout=ENDS_WITHIN_S)
        await d.closed(timeout=ENDS_WITHIN_S)
    assert turn.stop_reason == "error"
    (error,) = turn.of_type(AgentErrorFrame)
    assert "signal 9" in error.payload.message
    assert error.payload.severity == "fatal"
    assert len(d.of_type(SessionClosedFrame)) == 1


async def test_a_cli_killed_at_a_permission_question_resolves_it_and_ends_the_turn(
    llm: ScriptedOpenAI, copilot_cli: Path, tmp_path: Path
) -> None:
    async with copilot_session(llm, copilot_cli, tmp_path, policy=never_answer) as d:
        start = await d.start_prompt(WRITE_PROMPT)
        await d.wait_for(InteractionRequestFrame)
        kill_cli()
        turn = await d.wait_turn(start.payload.turn_id, timeout=ENDS_WITHIN_S)
        await d.closed(timeout=ENDS_WITHIN_S)
    assert turn.stop_reason == "error"
    (resolved,) = turn.of_type("agent.interaction.resolved")
    assert resolved.payload.outcome == "cancelled"
    assert not (tmp_path / "notes.txt").exists()
    (error,) = turn.of_type(AgentErrorFrame)
    assert "signal 9" in error.payload.message


async def test_a_cli_killed_while_the_master_runs_a_host_tool_cancels_that_call_and_ends_the_turn(
    llm: ScriptedOpenAI, copilot_cli: Path, tmp_path: Path
) -> None:
    async with copilot_session(llm, copilot_cli, tmp_path) as d:
        start, request = await host_call_started(d)
        kill_cli()  # the Master never answers the call: only the CLI's exit ends it
        turn = await d.wait_turn(start.payload.turn_id, timeout=ENDS_WITHIN_S)
        await d.closed(timeout=ENDS_WITHIN_S)
    assert turn.stop_reason == "error"
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert result.payload.invocation_id == request.payload.invocation_id
    assert result.payload.resolution == "cancelled"
    (error,) = turn.of_type(AgentErrorFrame)
    assert "signal 9" in error.payload.message
    assert error.payload.severity == "fatal"


async def test_a_prompt_after_the_cli_died_between_turns_ends_with_the_exit_and_the_session(
    llm: ScriptedOpenAI, copilot_cli: Path, tmp_path: Path
) -> None:
    async with copilot_session(llm, copilot_cli, tmp_path) as d:
        before = await d.prompt("Say hello.")
        kill_cli()
        turn = await d.prompt("Say hello.", timeout=ENDS_WITHIN_S)
        await d.closed(timeout=ENDS_WITHIN_S)
    assert before.stop_reason == "end_turn"
    assert turn.stop_reason == "error"
    (error,) = turn.of_type(AgentErrorFrame)
    assert "signal 9" in error.payload.message
