"""A tool call has one name in ``agent.interaction.request`` and ``tool.invoke.*``,
whatever order the agent's ``tool_call`` and ``session/request_permission`` arrive in.

Sans I/O first: each agent's messages for one shell call, as captured (``peer/ACP.md``),
fed to the translator with the permission request at every place among the updates.
Then through the adapter, with a fake claude-agent-acp that sends them in a chosen order
(the real one's order depends on its load: ``test_real_acp_agents`` forces the overtaking
order on it too).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from acp import schema
from rawp_adapter_acp import AcpAdapter
from rawp_adapter_acp._translate import Translator, waits_for_announcement

from rawp_adapters import Question
from rawp_adapters.frames import (
    ClientPayload,
    InteractionRequestFrame,
    InteractionResolvedFrame,
    ToolInvokeRequest,
    ToolInvokeRequestFrame,
    ToolInvokeResultFrame,
)
from rawp_adapters.testing import allow_all, drive, never_answer
from tests.acp import fake_claude

Message = schema.RequestPermissionRequest | schema.ToolCallStart | schema.ToolCallProgress


def update(body: dict[str, Any]) -> Any:
    return schema.SessionNotification.model_validate({"sessionId": "s", "update": body}).update


def permission(tool_call: dict[str, Any]) -> schema.RequestPermissionRequest:
    option = {"kind": "allow_once", "name": "Allow", "optionId": "allow"}
    return schema.RequestPermissionRequest.model_validate(
        {"sessionId": "s", "options": [option], "toolCall": tool_call}
    )


def init(meta: dict[str, Any] | None) -> schema.InitializeResponse:
    capabilities = {"_meta": meta} if meta is not None else {}
    return schema.InitializeResponse.model_validate(
        {"protocolVersion": 1, "agentCapabilities": capabilities}
    )


COMMAND = {"command": "touch allowed.txt", "description": "run a command"}

CAPTURED: dict[str, tuple[schema.InitializeResponse, str, list[Message], Message]] = {
    # agent: (initialize, the name, the updates in order, the permission request)
    "claude": (
        init({"claudeCode": {"promptQueueing": True}}),
        "Bash",
        [
            update(
                {
                    "_meta": {"claudeCode": {"toolName": "Bash"}},
                    "toolCallId": "toolu_1",
                    "sessionUpdate": "tool_call",
                    "rawInput": {},
                    "status": "pending",
                    "title": "Terminal",
                    "kind": "execute",
                    "content": [],
                }
            ),
            update(
                {
                    "_meta": {"claudeCode": {"toolName": "Bash"}},
                    "toolCallId": "toolu_1",
                    "sessionUpdate": "tool_call_update",
                    "rawInput": COMMAND,
                    "title": "touch allowed.txt",
                    "kind": "execute",
                }
            ),
            update(
                {
                    "_meta": {"claudeCode": {"toolName": "Bash"}},
                    "toolCallId": "toolu_1",
                    "sessionUpdate": "tool_call_update",
                    "status": "completed",
                    "rawOutput": "(Bash completed with no output)",
                }
            ),
        ],
        permission(
            {
                "toolCallId": "toolu_1",
                "rawInput": COMMAND,
                "title": "touch allowed.txt",
                "kind": "execute",
            }
        ),
    ),
    "qwen": (
        init({"imageCapability": {"autoHandlesWrongModel": True}}),
        "run_shell_command",
        [
            update(
                {
                    "sessionUpdate": "tool_call",
                    "toolCallId": "call_1",
                    "status": "pending",
                    "title": "Shell",
                    "kind": "execute",
                    "rawInput": {},
                    "_meta": {"toolName": "run_shell_command", "phase": "preparing"},
                }
            ),
            update(
                {
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": "call_1",
                    "status": "completed",
                    "_meta": {"toolName": "run_shell_command", "provenance": "builtin"},
                }
            ),
        ],
        permission(
            {
                "toolCallId": "call_1",
                "status": "pending",
                "title": "touch allowed.txt (run a command)",
                "kind": "execute",
                "rawInput": COMMAND,
                "_meta": {"toolName": "run_shell_command"},
            }
        ),
    ),
    "omp": (
        init(None),
        "execute",
        [
            update(
                {
                    "sessionUpdate": "tool_call",
                    "toolCallId": "call_1",
                    "title": "$ touch allowed.txt",
                    "kind": "execute",
                    "status": "pending",
                    "rawInput": {"command": "touch allowed.txt"},
                }
            ),
            update(
                {"sessionUpdate": "tool_call_update", "toolCallId": "call_1", "status": "completed"}
            ),
        ],
        permission(
            {
                "toolCallId": "call_1",
                "title": "touch allowed.txt",
                "kind": "execute",
                "status": "pending",
                "rawInput": {"command": "touch allowed.txt"},
            }
        ),
    ),
    "codex": (
        init(None),
        "execute",
        [
            update(
                {
                    "sessionUpdate": "tool_call",
                    "toolCallId": "call_1",
                    "title": "touch allowed.txt",
                    "kind": "execute",
                    "status": "in_progress",
                    "rawInput": {"command": ["/bin/bash", "-lc", "touch allowed.txt"]},
                }
            ),
            update(
                {"sessionUpdate": "tool_call_update", "toolCallId": "call_1", "status": "completed"}
            ),
        ],
        permission(
            {
                "toolCallId": "call_1",
                "kind": "execute",
                "status": "pending",
                "title": "touch allowed.txt",
                "rawInput": {"command": ["/bin/bash", "-lc", "touch allowed.txt"]},
            }
        ),
    ),
    "gemini": (
        init(None),
        "execute",
        [
            update(
                {
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": "run_shell_command__run_shell_command_1_0",
                    "status": "completed",
                    "title": "touch allowed.txt",
                    "kind": "execute",
                }
            ),
        ],
        permission(
            {
                "toolCallId": "run_shell_command__run_shell_command_1_0",
                "status": "pending",
                "title": "touch allowed.txt",
                "kind": "execute",
            }
        ),
    ),
}


def translate(
    initialize: schema.InitializeResponse, messages: list[Message]
) -> tuple[list[ClientPayload], Question]:
    """What the adapter makes of ``messages``: the frames, and the question it asks (when
    the permission request waits for the call's announcement, once that comes)."""
    translator = Translator("turn-1", waits_for_announcement=waits_for_announcement(initialize))
    frames: list[ClientPayload] = []
    questions: list[Question] = []
    waiting: schema.ToolCallUpdate | None = None
    for message in messages:
        if isinstance(message, schema.RequestPermissionRequest):
            announced = translator.permission(message.tool_call)
            if announced is None:
                waiting = message.tool_call
                continue
            frames += announced
            questions.append(translator.question(message.tool_call, timeout_ms=None))
        else:
            frames += translator.update(message)
            if waiting is not None and waiting.tool_call_id in requested(frames):
                questions.append(translator.question(waiting, timeout_ms=None))
                waiting = None
    (question,) = questions
    return frames, question


def requested(frames: list[ClientPayload]) -> dict[str, str]:
    """The name of each ``tool.invoke.request``, by invocation id."""
    return {f.invocation_id: f.tool_name for f in frames if isinstance(f, ToolInvokeRequest)}


@pytest.mark.parametrize("agent", list(CAPTURED))
def test_a_permission_names_the_tool_as_its_call_is_named_wherever_it_comes(agent: str) -> None:
    initialize, name, updates, asked = CAPTURED[agent]
    for place in range(len(updates) + 1):
        frames, question = translate(initialize, [*updates[:place], asked, *updates[place:]])
        assert question.context is not None
        call_id = question.context.tool_call_id
        assert call_id is not None
        assert (question.context.tool_name, requested(frames)) == (name, {call_id: name}), place
        # the question still carries what the request says of the call
        assert question.title == asked.tool_call.title
        if asked.tool_call.raw_input is not None:
            assert question.context.tool_input == asked.tool_call.raw_input


def test_only_claude_agent_acp_makes_a_permission_wait_for_its_tool_call() -> None:
    waits = {agent: waits_for_announcement(init) for agent, (init, *_) in CAPTURED.items()}
    assert waits == {"claude": True, "qwen": False, "omp": False, "codex": False, "gemini": False}


# ---------------------------------------------------------------- through the adapter


def fake_claude_adapter(mode: str, **settings: Any) -> AcpAdapter:
    command = [sys.executable, "-I", "-S", fake_claude.__file__, mode]
    return AcpAdapter.from_settings({"command": command, **settings})


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["announce-first", "ask-first"])
async def test_claude_s_shell_tool_is_asked_about_and_reported_as_bash_in_either_order(
    mode: str, tmp_path: Path
) -> None:
    adapter = fake_claude_adapter(mode)
    async with drive(adapter, workspace=tmp_path, policy=allow_all, timeout=30) as d:
        turn = await d.prompt("run it")
    (request,) = turn.of_type(InteractionRequestFrame)
    (invoked,) = turn.of_type(ToolInvokeRequestFrame)
    assert request.payload.context is not None
    assert (request.payload.context.tool_name, invoked.payload.tool_name) == ("Bash", "Bash")
    assert request.payload.context.tool_call_id == invoked.payload.invocation_id
    assert request.payload.context.tool_input == {
        "command": fake_claude.COMMAND,
        "description": "run a command",
    }
    assert turn.frames.index(invoked) < turn.frames.index(request)
    (resolved,) = turn.of_type(InteractionResolvedFrame)
    assert resolved.payload.outcome == "allowed"
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert not result.payload.is_error


@pytest.mark.anyio
async def test_a_permission_for_a_call_claude_never_announces_is_asked_after_the_wait(
    tmp_path: Path,
) -> None:
    adapter = fake_claude_adapter("never-announce", announcement_wait=0.2)
    async with drive(adapter, workspace=tmp_path, policy=allow_all, timeout=30) as d:
        turn = await d.prompt("run it")
    (request,) = turn.of_type(InteractionRequestFrame)
    (invoked,) = turn.of_type(ToolInvokeRequestFrame)
    assert request.payload.context is not None
    assert (request.payload.context.tool_name, invoked.payload.tool_name) == ("execute", "execute")
    assert turn.stop_reason == "end_turn"


@pytest.mark.anyio
async def test_an_abort_while_a_permission_waits_for_its_tool_call_refuses_it_at_once(
    tmp_path: Path,
) -> None:
    adapter = fake_claude_adapter("never-announce", announcement_wait=600)
    async with drive(adapter, workspace=tmp_path, policy=never_answer, timeout=30) as d:
        start = await d.start_prompt("run it")
        turn_id = start.payload.turn_id
        await d.wait_for("agent.text.delta", where=lambda f: f.payload.text == fake_claude.ASKED)
        with anyio.fail_after(10):  # far below the wait
            await d.send(d.control.abort(turn_id))
            turn = await d.wait_turn(turn_id)
    assert turn.stop_reason == "cancelled"
    assert turn.of_type(InteractionRequestFrame) == []
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert result.payload.is_error
