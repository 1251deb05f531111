"""The demo core through the adapter: the offline main job's whole flow."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rawp_adapter_sdk import SdkAdapter
from rawp_adapter_sdk.cores.demo import DEFAULT_FILE_NAME

from rawp_adapters.frames import InteractionRequestFrame, ToolInvokeResultFrame
from rawp_adapters.testing import Reply, allow_all, deny_all, drive, never_answer, run_conformance

pytestmark = pytest.mark.anyio


def files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def demo(delay_ms: int = 0) -> SdkAdapter:
    return SdkAdapter.from_settings({"core": "demo", "core_options": {"delay_ms": delay_ms}})


async def test_an_allowed_turn_writes_the_file_the_prompt_names(tmp_path: Path) -> None:
    async with drive(demo(), workspace=tmp_path, policy=allow_all) as d:
        turn = await d.prompt("Write a short note about pipes to notes.txt")
    note = (tmp_path / "notes.txt").read_text()
    assert "You asked: Write a short note about pipes to notes.txt" in note
    types = [f.type for f in turn.frames]
    for expected in (
        "agent.thinking.delta",
        "agent.thinking.done",
        "agent.text.done",
        "tool.invoke.request",
        "agent.interaction.request",
        "tool.invoke.stream",
        "tool.invoke.result",
        "session.usage",
    ):
        assert expected in types
    assert types.index("agent.interaction.request") < types.index("tool.invoke.result")
    (request,) = turn.of_type(InteractionRequestFrame)
    assert request.payload.context.tool_name == "write_file"
    assert request.payload.context.tool_input == {"path": "notes.txt", "content": note}
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert not result.payload.is_error
    assert result.payload.invocation_id == request.payload.context.tool_call_id
    assert turn.stop_reason == "end_turn"
    assert turn.end.payload.usage is not None


async def test_a_prompt_without_a_file_name_writes_the_default_file(tmp_path: Path) -> None:
    async with drive(demo(), workspace=tmp_path) as d:
        await d.prompt("hello")
    assert "You asked: hello" in (tmp_path / DEFAULT_FILE_NAME).read_text()


async def test_a_refused_turn_writes_nothing_and_says_why(tmp_path: Path) -> None:
    async with drive(demo(), workspace=tmp_path, policy=deny_all) as d:
        turn = await d.prompt("note it in notes.txt")
    assert files(tmp_path) == []
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert result.payload.is_error
    assert "refused" in turn.text
    assert turn.stop_reason == "end_turn"


async def test_an_unanswered_request_times_out_and_the_reply_says_so(tmp_path: Path) -> None:
    adapter = SdkAdapter.from_settings(
        {"core_options": {"delay_ms": 0}, "permission_timeout_ms": 20}
    )
    async with drive(adapter, workspace=tmp_path, policy=never_answer) as d:
        turn = await d.prompt("hello")
    assert files(tmp_path) == []
    assert "timed out" in turn.text


async def test_the_masters_edited_input_is_what_gets_written(tmp_path: Path) -> None:
    edit = json.dumps({"path": "edited.txt", "content": "changed by the Master\n"})
    async with drive(demo(), workspace=tmp_path, policy=lambda _: Reply.allow(edit)) as d:
        await d.prompt("hello")
    assert files(tmp_path) == ["edited.txt"]
    assert (tmp_path / "edited.txt").read_text() == "changed by the Master\n"


@pytest.mark.parametrize("path", ["../escape.txt", "/tmp/escape.txt", "link/escape.txt"])
async def test_an_edited_path_outside_the_workspace_is_refused_by_the_tool(
    tmp_path: Path, path: str
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "link").symlink_to(tmp_path)
    edit = json.dumps({"path": path, "content": "x"})
    async with drive(demo(), workspace=workspace, policy=lambda _: Reply.allow(edit)) as d:
        turn = await d.prompt("hello")
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert result.payload.is_error
    assert "not a path inside the workspace" in result.payload.output
    assert not (tmp_path / "escape.txt").exists()


async def test_aborting_a_streaming_turn_ends_it_cancelled_without_writing(
    tmp_path: Path,
) -> None:
    async with drive(demo(delay_ms=60_000), workspace=tmp_path) as d:
        start = await d.start_prompt("hello")
        await d.wait_for("agent.thinking.delta")
        await d.send(d.control.abort(start.payload.turn_id))
        turn = await d.wait_turn(start.payload.turn_id, timeout=5)
    assert turn.stop_reason == "cancelled"
    assert files(tmp_path) == []


async def test_the_demo_core_keeps_the_protocols_rules(tmp_path: Path) -> None:
    await run_conformance(
        lambda: demo(delay_ms=20), workspace=tmp_path, long_prompt="take your time"
    )
