"""Host tools with the real omp (``set_host_tools``, ``host_tool_call`` …): offered to
the model among omp's own tools and called, streamed and answered; called through omp's
``xd://`` device write; left unanswered; aborted mid-call; refused before the Master is
asked. pi has no host tools and says so. Every stream is checked by ``drive``; the
scripted model calls only what omp offers it (``ScriptedOpenAI.violations``)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from rawp_adapters import ControlFrames, SessionOptions
from rawp_adapters.frames import (
    InteractionRequestFrame,
    SessionCapabilitiesFrame,
    SessionErrorFrame,
    ToolCatalogUpdatedFrame,
    ToolInvokeRequestFrame,
    ToolInvokeResultFrame,
    ToolInvokeStreamFrame,
)
from rawp_adapters.testing import SessionDriver, deny_all, drive
from tests.cli.conftest import serve
from tests.process.real_peers import TIMEOUT, only, peer_adapter, peer_settings
from tests.support.llm_openai import (
    CALL_TOOL,
    DEFAULT_TEXT,
    TOOL_SAID,
    WRITE_FILE,
    ScriptedOpenAI,
    offered_tools,
)
from tests.support.peers import PeerName

pytestmark = [pytest.mark.anyio, pytest.mark.peers]

ECHO: dict[str, Any] = {
    "name": "echo_host",
    "description": "Echo a message from the Master",
    "input_schema": {
        "type": "object",
        "properties": {"message": {"type": "string", "maxLength": 12}},
        "required": ["message"],
        "additionalProperties": False,
    },
}


def call_echo(message: str) -> str:
    return f"{CALL_TOOL} echo_host {json.dumps({'message': message})}"


@pytest.fixture
def llm() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI() as server:
        yield server
        assert not server.violations, "the scripted model called a tool omp did not offer"


async def publish_echo(d: SessionDriver) -> list[str]:
    await d.send(d.control.publish_tools([ECHO]))
    updated = await d.wait_for(ToolCatalogUpdatedFrame)
    return updated.payload.tools


@pytest.mark.parametrize("name", only("omp"))
async def test_omp_calls_a_host_tool_the_master_streams_and_answers(
    name: PeerName, llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    adapter, workspace = peer_adapter(name, llm, tmp_path)
    async with drive(adapter, workspace=workspace, timeout=TIMEOUT) as d:
        published = await publish_echo(d)
        start = await d.start_prompt(call_echo("hi"))
        request = await d.wait_for(ToolInvokeRequestFrame)
        call_id = request.payload.invocation_id
        await d.send(d.control.tool_stream(call_id, "working… "))
        await d.wait_for(ToolInvokeStreamFrame)
        await d.send(d.control.tool_result(call_id, "the Master says hi"))
        turn = await d.wait_turn(start.payload.turn_id)

    (caps,) = d.of_type(SessionCapabilitiesFrame)
    assert caps.payload.features.host_tools
    assert published == ["echo_host"]
    assert "echo_host" in offered_tools(llm.requests[0]), "omp offered it to the model"
    assert (request.payload.executor, request.payload.tool_name) == ("master", "echo_host")
    assert request.payload.input == {"message": "hi"}
    assert len(turn.of_type(ToolInvokeRequestFrame)) == 1, "omp's own report of it is dropped"
    assert [f.payload.output for f in turn.of_type(ToolInvokeStreamFrame)] == ["working… "]
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert (result.payload.resolution, result.payload.is_error) == ("answered", False)
    assert turn.stop_reason == "end_turn"
    assert turn.text.endswith(f"{TOOL_SAID}the Master says hi"), "the model got the answer"


@pytest.mark.parametrize("name", only("omp"))
async def test_a_model_writing_to_the_host_tools_device_calls_it_and_only_it_is_asked(
    name: PeerName, llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    # omp tells the model that any of its tools runs by writing the JSON arguments to
    # xd://<tool>; the Master's gate asks about the host tool, not about `write`.
    adapter, workspace = peer_adapter(name, llm, tmp_path, permission_tools="*")
    async with drive(adapter, workspace=workspace, timeout=TIMEOUT) as d:
        await publish_echo(d)
        start = await d.start_prompt(f"{WRITE_FILE} xd://echo_host {json.dumps({'message': 'hi'})}")
        request = await d.wait_for(ToolInvokeRequestFrame)
        await d.send(d.control.tool_result(request.payload.invocation_id, "the Master says hi"))
        turn = await d.wait_turn(start.payload.turn_id)

    (question,) = turn.of_type(InteractionRequestFrame)
    assert question.payload.context.tool_name == "echo_host"
    assert question.payload.context.tool_input == {"message": "hi"}
    (request,) = turn.of_type(ToolInvokeRequestFrame)
    assert (request.payload.executor, request.payload.tool_name) == ("master", "echo_host")
    assert request.payload.input == {"message": "hi"}
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert result.payload.invocation_id == request.payload.invocation_id
    assert (result.payload.resolution, result.payload.is_error) == ("answered", False)
    assert turn.text.endswith(f"{TOOL_SAID}the Master says hi"), "the model got the answer"


@pytest.mark.parametrize("name", only("omp"))
async def test_a_host_call_left_unanswered_fails_at_its_deadline_and_omp_goes_on(
    name: PeerName, llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    adapter, workspace = peer_adapter(name, llm, tmp_path)
    options = SessionOptions(host_tool_timeout_ms=300)
    async with drive(adapter, workspace=workspace, options=options, timeout=TIMEOUT) as d:
        await publish_echo(d)
        turn = await d.prompt(call_echo("anyone?"))
        (request,) = turn.of_type(ToolInvokeRequestFrame)
        await d.send(d.control.tool_result(request.payload.invocation_id, "too late"))
        late = await d.wait_for(SessionErrorFrame)
        after = await d.prompt("Say hello.")

    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert (result.payload.resolution, result.payload.is_error) == ("deadline", True)
    assert turn.stop_reason == "end_turn"
    assert "did not answer within 300 ms" in turn.text, "the agent was told"
    assert late.payload.error_code == "UNKNOWN_INVOCATION"
    assert after.text == DEFAULT_TEXT


@pytest.mark.parametrize("name", only("omp"))
async def test_a_master_on_the_stdio_bridge_sets_the_host_call_deadline(
    name: PeerName, llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    settings, workspace = peer_settings(name, llm, tmp_path)
    args = [
        *("--adapter", "process", "--settings-json", json.dumps(settings)),
        *("--workspace", str(workspace), "--host-tool-timeout-ms", "400"),
    ]
    err = tmp_path / "stderr"
    async with serve(*args, env=dict(os.environ), cwd=workspace, stderr=err) as bridge:
        await bridge.next_frame()
        control = ControlFrames(bridge.session_id)
        for frame in (control.publish_tools([ECHO]), control.prompt(call_echo("anyone?"))):
            await bridge.write(frame.model_dump_json().encode() + b"\n")
        request = await bridge.until("tool.invoke.request", executor="master")
        result = await bridge.until("tool.invoke.result")
        end = await bridge.until("session.turn.end")
        await bridge.close_stdin()
        await bridge.rest()
        assert await bridge.exit_code() == 0

    assert request["payload"]["timeout_ms"] == 400
    assert result["payload"]["invocation_id"] == request["payload"]["invocation_id"]
    assert result["payload"]["resolution"] == "deadline"
    assert "did not answer within 400 ms" in result["payload"]["output"]
    waited = at(result) - at(request)
    assert 0.39 <= waited.total_seconds() < 10, "it ended at the deadline the Master set"
    assert end["payload"]["stop_reason"] == "end_turn"


def at(frame: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(frame["timestamp"].replace("Z", "+00:00"))


@pytest.mark.parametrize("name", only("omp"))
async def test_an_abort_mid_call_cancels_the_host_call_and_the_session_goes_on(
    name: PeerName, llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    adapter, workspace = peer_adapter(name, llm, tmp_path)
    async with drive(adapter, workspace=workspace, timeout=TIMEOUT) as d:
        await publish_echo(d)
        start = await d.start_prompt(call_echo("wait"))
        await d.wait_for(ToolInvokeRequestFrame)
        await d.send(d.control.abort())
        aborted = await d.wait_turn(start.payload.turn_id)
        after = await d.prompt("Say hello.")

    assert aborted.stop_reason == "cancelled"
    (result,) = aborted.of_type(ToolInvokeResultFrame)
    assert (result.payload.resolution, result.payload.is_error) == ("cancelled", True)
    assert after.text == DEFAULT_TEXT
    assert not after.of_type(ToolInvokeResultFrame)


@pytest.mark.parametrize("name", only("omp"))
async def test_an_invalid_host_call_goes_back_to_omp_as_an_error_and_the_master_is_not_asked(
    name: PeerName, llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    adapter, workspace = peer_adapter(name, llm, tmp_path)
    async with drive(adapter, workspace=workspace, timeout=TIMEOUT) as d:
        await publish_echo(d)
        turn = await d.prompt(call_echo("a message far too long for it"))

    (request,) = turn.of_type(ToolInvokeRequestFrame)
    assert request.payload.executor is None, "nothing for the Master to answer"
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert result.payload.is_error
    assert "at most 12 characters" in result.payload.output
    assert turn.stop_reason == "end_turn"
    assert f"{TOOL_SAID}Validation failed" in turn.text, "the model saw the error"


@pytest.mark.parametrize("name", only("omp"))
async def test_the_permission_gate_asks_once_before_the_master_runs_a_host_tool(
    name: PeerName, llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    adapter, workspace = peer_adapter(name, llm, tmp_path, permission_tools="*")
    async with drive(adapter, workspace=workspace, policy=deny_all, timeout=TIMEOUT) as d:
        await publish_echo(d)
        turn = await d.prompt(call_echo("may I?"))

    (question,) = turn.of_type(InteractionRequestFrame)
    assert question.payload.interaction_type == "PERMISSION"
    assert question.payload.context.tool_name == "echo_host"
    (request,) = turn.of_type(ToolInvokeRequestFrame)
    assert request.payload.executor is None, "denied: the Master was never asked to run it"
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert (result.payload.resolution, result.payload.is_error) == ("denied", True)


@pytest.mark.parametrize("name", only("pi"))
async def test_pi_has_no_host_tools_and_a_catalog_is_refused_as_unsupported(
    name: PeerName, llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    adapter, workspace = peer_adapter(name, llm, tmp_path)
    async with drive(adapter, workspace=workspace, timeout=TIMEOUT) as d:
        await d.send(d.control.publish_tools([ECHO]))
        error = await d.wait_for(SessionErrorFrame)
        after = await d.prompt("Say hello.")

    (caps,) = d.of_type(SessionCapabilitiesFrame)
    assert not caps.payload.features.host_tools
    assert error.payload.error_code == "UNSUPPORTED"
    assert not d.of_type(ToolCatalogUpdatedFrame)
    assert after.text == DEFAULT_TEXT


@pytest.mark.parametrize("name", only("omp"))
async def test_a_host_tool_named_like_an_omp_built_in_is_rejected_not_silently_hidden(
    name: PeerName, llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    adapter, workspace = peer_adapter(name, llm, tmp_path)
    async with drive(adapter, workspace=workspace, timeout=TIMEOUT) as d:
        await d.send(d.control.publish_tools([{**ECHO, "name": "Task"}]))
        error = await d.wait_for(SessionErrorFrame)
        await d.send(d.control.publish_tools([ECHO]))
        updated = await d.wait_for(ToolCatalogUpdatedFrame)
    assert error.payload.error_code == "REJECTED"
    assert "Task" in error.payload.message
    assert updated.payload.tools == [ECHO["name"]], "the session goes on and takes others"
