"""The translator's part in host tools and plans: the agent's own events of a host call
(called by its name or by a ``write`` to its ``xd://`` device) are dropped in whatever
order they come, a host call the agent refused itself is reported as its own tool call,
and ``todo`` results become the plan."""

from __future__ import annotations

import json
from typing import Any

from rawp_adapter_process._plans import TodoPhase, TodoTask, plan_entries, todo_phases
from rawp_adapter_process._translate import Output, Translator
from rawp_adapter_process._wire import decode_line

from rawp_adapters.frames import PlanEntry, PlanUpdated, ToolInvokeRequest, ToolInvokeResult

START = {"type": "tool_execution_start", "toolCallId": "c1", "toolName": "echo", "args": {}}
END = {
    "type": "tool_execution_end",
    "toolCallId": "c1",
    "toolName": "echo",
    "result": {"content": [{"type": "text", "text": "Validation failed"}]},
    "isError": True,
}


def feed(translator: Translator, *events: dict[str, Any]) -> list[Output]:
    out: list[Output] = []
    for event in events:
        message = decode_line(json.dumps(event).encode())
        assert message is not None, event
        out += translator.feed(message)
    return out


def host_translator() -> Translator:
    translator = Translator()
    translator.begin_turn("t1")
    translator.host_tools = frozenset({"echo"})
    return translator


def test_a_host_calls_own_events_are_dropped_before_or_after_the_agent_claims_it() -> None:
    claimed_first = host_translator()
    claimed_first.claim_host_call("c1")
    assert feed(claimed_first, START, END) == []

    started_first = host_translator()
    assert feed(started_first, START) == []
    started_first.claim_host_call("c1")
    assert feed(started_first, END) == []


def test_a_host_call_the_agent_refused_itself_is_reported_as_its_own_failed_call() -> None:
    request, result = feed(host_translator(), START, END)
    assert isinstance(request, ToolInvokeRequest)
    assert request.executor is None
    assert isinstance(result, ToolInvokeResult)
    assert result.is_error
    assert result.output == "Validation failed"


def device_write(path: str, content: str = '{"message": "hi"}') -> dict[str, Any]:
    """omp's ``write`` of the model, which runs the tool at ``xd://<name>``."""
    args = {"path": path, "content": content}
    return {**START, "toolName": "write", "args": args}


def test_a_write_to_a_host_tools_device_is_the_host_call_and_not_reported_as_a_write() -> None:
    translator = host_translator()
    assert feed(translator, device_write("xd://echo")) == []
    translator.claim_host_call("c1")
    assert feed(translator, {**END, "toolName": "write", "isError": False}) == []


def test_a_device_write_that_never_reached_the_master_is_reported_as_the_agents_write() -> None:
    translator = host_translator()
    request, result = feed(translator, device_write("xd://echo", "not json"), END)
    assert isinstance(request, ToolInvokeRequest)
    assert (request.tool_name, request.executor) == ("write", None)
    assert isinstance(result, ToolInvokeResult)
    assert result.is_error


def test_only_a_write_to_a_published_tools_device_is_a_host_call() -> None:
    translator = host_translator()
    assert translator.host_tool_of("echo", {}) == "echo"
    assert translator.host_tool_of("write", {"path": " XD://echo "}) == "echo", "as omp reads it"
    for name, args in [
        ("write", {"path": "xd://lsp"}),
        ("write", {"path": "xd://echo/x"}),
        ("write", {"path": "xd://"}),
        ("write", {"path": "notes/xd://echo"}),
        ("write", {"content": "{}"}),
        ("read", {"path": "xd://echo"}),
        ("bash", {}),
    ]:
        assert translator.host_tool_of(name, args) is None, (name, args)
    (request,) = feed(translator, device_write("xd://lsp"))
    assert isinstance(request, ToolInvokeRequest)
    assert request.tool_name == "write"


def test_a_write_to_a_device_reports_what_the_devices_tool_answered() -> None:
    translator = host_translator()
    stamped = {"content": [{"type": "text", "text": "stamped"}]}
    request, result = feed(
        translator,
        device_write("xd://mcp__local_stamp"),
        {**END, "toolName": "write", "isError": False, "result": stamped},
    )
    assert isinstance(request, ToolInvokeRequest)
    assert request.tool_name == "write"
    assert isinstance(result, ToolInvokeResult)
    assert (result.output_type, result.output) == ("text", "stamped")


def todo_end(op: str, phases: list[dict[str, Any]], *, error: bool = False) -> dict[str, Any]:
    return {
        "type": "tool_execution_end",
        "toolCallId": "t",
        "toolName": "todo",
        "result": {"content": [], "details": {"op": op, "phases": phases}},
        "isError": error,
    }


def test_a_todo_change_becomes_the_whole_plan_and_a_view_or_failure_none() -> None:
    translator = Translator()
    translator.begin_turn("t1")
    start = {"type": "tool_execution_start", "toolCallId": "t", "toolName": "todo", "args": {}}
    phases = [
        {
            "name": "Build",
            "tasks": [
                {"content": "a", "status": "completed"},
                {"content": "b", "status": "blocked"},
                {"content": "c", "status": "abandoned"},
            ],
        }
    ]
    changed = feed(translator, start, todo_end("done", phases))
    assert changed[-1] == PlanUpdated(
        turn_id="t1",
        entries=[
            PlanEntry(content="a", status="completed", phase="Build"),
            PlanEntry(content="b", status="pending", phase="Build"),
        ],
    )
    for end in (todo_end("view", phases), todo_end("done", phases, error=True)):
        outputs = feed(translator, start, end)
        assert not [o for o in outputs if isinstance(o, PlanUpdated)]


def test_a_plan_goes_to_the_agent_as_phases_of_consecutive_entries_and_comes_back_alike() -> None:
    plan = [
        PlanEntry(content="a", phase="One"),
        PlanEntry(content="b", status="in_progress", phase="One"),
        PlanEntry(content="c"),
    ]
    phases = todo_phases(plan)
    assert [(p["name"], len(p["tasks"])) for p in phases] == [("One", 2), ("Plan", 1)]
    decoded = [
        TodoPhase(p["name"], [TodoTask(t["content"], t["status"]) for t in p["tasks"]])
        for p in phases
    ]
    assert plan_entries(decoded) == [*plan[:2], PlanEntry(content="c", phase="Plan")]
