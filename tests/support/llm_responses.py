"""A scripted OpenAI **Responses** API on 127.0.0.1, for codex (codex-acp) offline.

Stdlib only, built on :mod:`tests.support._scripted_http` like the others::

    with ScriptedResponses() as llm:
        llm.base_url      # http://127.0.0.1:PORT/v1  (the custom model provider's base_url)
        llm.requests      # bodies of every POST /v1/responses, in arrival order

Endpoints
---------
* ``POST /v1/responses`` with ``"stream": true``: server-sent events as codex reads them,
  each ``event: <type>`` + ``data: {"type": <type>, ...}``: ``response.created``; per text
  part ``response.output_item.added`` (a ``message``), ``response.output_text.delta`` (n times) and
  ``response.output_item.done`` with the whole ``message`` item; per reasoning part
  ``response.reasoning_summary_text.delta`` (n times) and ``response.output_item.done`` with a
  ``reasoning`` item; per tool call ``response.output_item.added`` and
  ``response.output_item.done`` with a ``function_call`` item (``name``, ``arguments`` JSON,
  ``call_id``, the ``namespace`` of a tool offered inside one); then ``response.completed``
  with ``usage`` (``input_tokens``, ``output_tokens``, ``total_tokens`` and their
  details). Without ``stream``: one ``response`` JSON object.
* ``GET /v1/models``: the one model.

Choosing the reply
------------------
The same keywords and replies as :mod:`tests.support.llm_openai` (``RUN_BASH``,
``SLOW_STREAM``, ``THINK_FIRST``, ``MAX_TOKENS``, ``HTTP_<status>``, a greeting otherwise),
read from the last ``input_text`` part of the last ``role: "user"`` message of ``input``
(codex puts its environment context in earlier user messages). When ``input`` ends with
``function_call_output`` items, the reply quotes them (``Tool said: `` + output).

Its own keyword: :data:`WRITE_PLAN` calls codex's ``update_plan`` tool (when offered) with
:data:`PLAN_STEPS`, the first ``in_progress``, the others ``pending``.

The shell tool is picked from the request's tool list: codex's ``exec_command {cmd}``, else a
``shell {command: ["bash", "-lc", cmd]}``. ``WRITE_FILE <path> [content]`` becomes codex's
``apply_patch`` (a freeform ``custom`` tool: a ``custom_tool_call`` item whose ``input`` is
the patch adding the file) when the request offers it. A ``custom_tool_call_output`` is
quoted like a ``function_call_output``.

Only what the request offers
----------------------------
A call of a tool the request does not offer (by ``name`` among its ``tools``, or inside an
offered ``namespace``) is a violation of the script, as in :mod:`tests.support.llm_openai`:
answered HTTP 400 and recorded in ``ScriptedResponses.violations``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from tests.support._scripted_http import (
    ScriptedHandler,
    ScriptedServer,
    sse_event,
)
from tests.support.llm_openai import (
    API_ERROR_MESSAGE,
    DEFAULT_MODEL,
    PROMPT_TOKENS,
    VIOLATION,
    Part,
    Reply,
    ToolCall,
    plan_reply_from,
)

__all__ = [
    "APPLY_PATCH",
    "PLAN_STEPS",
    "WRITE_PLAN",
    "ScriptedResponses",
    "add_file_patch",
    "last_user_text",
    "plan_responses_reply",
    "shell_tool_call",
]

WRITE_PLAN = "WRITE_PLAN"
PLAN_STEPS = ("Read the code", "Write the fix")


def _items(body: Any) -> list[dict[str, Any]]:
    items = body.get("input") if isinstance(body, dict) else None
    if isinstance(items, str):
        return [{"type": "message", "role": "user", "content": items}]
    if not isinstance(items, list):
        return []
    return [i for i in items if isinstance(i, dict)]


def _last_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    texts = (
        [
            str(p.get("text", ""))
            for p in content
            if isinstance(p, dict) and p.get("type") in ("input_text", "text")
        ]
        if isinstance(content, list)
        else []
    )
    return texts[-1] if texts else ""


def last_user_text(body: Any) -> str:
    """The last text part of the last ``role: "user"`` message of ``input`` ("" when none)."""
    for item in reversed(_items(body)):
        if item.get("role") == "user" and item.get("type", "message") == "message":
            return _last_text(item.get("content"))
    return ""


_OUTPUTS = ("function_call_output", "custom_tool_call_output")


def _trailing_outputs(body: Any) -> list[str]:
    outputs: list[str] = []
    for item in reversed(_items(body)):
        if item.get("type") not in _OUTPUTS:
            break
        output = item.get("output")
        if isinstance(output, list):
            output = "\n".join(str(p.get("text", "")) for p in output if isinstance(p, dict))
        outputs.append(str(output))
    outputs.reverse()
    return outputs


def _tools(body: Any) -> list[dict[str, Any]]:
    """The request's tools, those of its ``namespace`` tools included."""
    tools = body.get("tools") if isinstance(body, dict) else None
    found: list[dict[str, Any]] = []
    for tool in tools if isinstance(tools, list) else []:
        if isinstance(tool, dict):
            found.append(tool)
            found += _tools(tool)
    return found


def _tool_names(body: Any) -> set[str]:
    return {str(t["name"]) for t in _tools(body) if isinstance(t.get("name"), str)}


def _namespaces(body: Any) -> dict[str, str]:
    """The namespace of each tool offered inside one (codex's ``mcp__<server>``)."""
    tools = body.get("tools") if isinstance(body, dict) else None
    return {
        str(inner["name"]): str(tool["name"])
        for tool in (tools if isinstance(tools, list) else [])
        if isinstance(tool, dict) and tool.get("type") == "namespace"
        for inner in _tools(tool)
        if isinstance(inner.get("name"), str)
    }


def _custom_tools(body: Any) -> set[str]:
    """Freeform tools (``type: custom``): called with a text ``input``, not JSON."""
    return {str(t["name"]) for t in _tools(body) if t.get("type") == "custom"}


APPLY_PATCH = "apply_patch"


def add_file_patch(path: str, content: str) -> str:
    """An ``apply_patch`` patch that adds ``path`` with ``content``."""
    lines = "".join(f"+{line}\n" for line in content.splitlines() or [""])
    return f"*** Begin Patch\n*** Add File: {path}\n{lines}*** End Patch\n"


def _as_patch(body: Any, call: ToolCall) -> ToolCall:
    """A ``write`` made codex's ``apply_patch`` when the request offers it."""
    if call.name != "write" or APPLY_PATCH not in _custom_tools(body):
        return call
    patch = add_file_patch(str(call.arguments["path"]), str(call.arguments["content"]))
    return ToolCall(APPLY_PATCH, {"input": patch})


def unoffered_call(body: Any, reply: Reply) -> str | None:
    """Which call of ``reply`` the request does not offer (the script would cheat)."""
    offered = _tool_names(body)
    for call in reply.tool_calls:
        if call.name not in offered:
            return (
                f"the script calls the tool {call.name!r}, which the request does not offer "
                f"(offered: {', '.join(sorted(offered)) or 'none'})"
            )
    return None


def shell_tool_call(body: Any, command: str) -> ToolCall:
    """codex's ``exec_command {cmd}`` when offered, else ``shell {command: [argv]}``."""
    if "exec_command" in _tool_names(body):
        return ToolCall("exec_command", {"cmd": command})
    return ToolCall("shell", {"command": ["bash", "-lc", command]})


def plan_responses_reply(body: Any) -> Reply:
    """The scripted reply for one Responses request (see the module docstring)."""
    outputs = _trailing_outputs(body)
    if not outputs and WRITE_PLAN in last_user_text(body) and "update_plan" in _tool_names(body):
        steps = [
            {"step": step, "status": "in_progress" if i == 0 else "pending"}
            for i, step in enumerate(PLAN_STEPS)
        ]
        call = ToolCall("update_plan", {"explanation": "The plan.", "plan": steps})
        return Reply(tool_calls=(call,), finish_reason="tool_calls")
    reply = plan_reply_from(
        outputs,
        last_user_text(body),
        lambda command: shell_tool_call(body, command),
    )
    return replace(reply, tool_calls=tuple(_as_patch(body, c) for c in reply.tool_calls))


def _usage(reply: Reply) -> dict[str, Any]:
    reasoning = sum(len(p.chunks) for p in reply.parts if p.kind == "reasoning")
    output = sum(len(p.chunks) for p in reply.parts) + len(reply.tool_calls)
    return {
        "input_tokens": PROMPT_TOKENS,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": PROMPT_TOKENS + output,
    }


def _event(kind: str, **fields: Any) -> str:
    return sse_event(json.dumps({"type": kind, **fields}), event=kind)


def _output_items(
    reply: Reply, ids: Callable[[str], str], custom: set[str], namespaces: dict[str, str]
) -> list[tuple[Part | ToolCall, dict[str, Any]]]:
    items: list[tuple[Part | ToolCall, dict[str, Any]]] = []
    for part in reply.parts:
        text = "".join(part.chunks)
        if part.kind == "text":
            item: dict[str, Any] = {
                "type": "message",
                "id": ids("msg_scripted_"),
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        else:
            item = {
                "type": "reasoning",
                "id": ids("rs_scripted_"),
                "summary": [{"type": "summary_text", "text": text}],
            }
        items.append((part, item))
    for call in reply.tool_calls:
        if call.name in custom:
            item = {
                "type": "custom_tool_call",
                "id": ids("ctc_scripted_"),
                "status": "completed",
                "name": call.name,
                "input": str(call.arguments.get("input", "")),
                "call_id": ids("call_scripted_"),
            }
        else:
            item = {
                "type": "function_call",
                "id": ids("fc_scripted_"),
                "status": "completed",
                "name": call.name,
                "arguments": json.dumps(call.arguments),
                "call_id": ids("call_scripted_"),
            }
            if call.name in namespaces:
                item["namespace"] = namespaces[call.name]
        items.append((call, item))
    return items


def _response(response_id: str, model: str, status: str, output: list[Any], usage: Any) -> Any:
    return {
        "id": response_id,
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "model": model,
        "output": output,
        "usage": usage,
    }


def _sse_events(
    reply: Reply, response_id: str, model: str, items: list[tuple[Part | ToolCall, dict[str, Any]]]
) -> Iterator[tuple[str, bool]]:
    yield (
        _event("response.created", response=_response(response_id, model, "in_progress", [], None)),
        False,
    )
    for index, (source, item) in enumerate(items):
        if isinstance(source, Part) and source.kind == "text":
            empty = {**item, "status": "in_progress", "content": []}
            yield _event("response.output_item.added", output_index=index, item=empty), False
            for chunk in source.chunks:
                yield (
                    _event(
                        "response.output_text.delta",
                        item_id=item["id"],
                        output_index=index,
                        content_index=0,
                        delta=chunk,
                    ),
                    True,
                )
        elif isinstance(source, Part):
            yield (
                _event(
                    "response.output_item.added", output_index=index, item={**item, "summary": []}
                ),
                False,
            )
            for chunk in source.chunks:
                yield (
                    _event(
                        "response.reasoning_summary_text.delta",
                        item_id=item["id"],
                        output_index=index,
                        summary_index=0,
                        delta=chunk,
                    ),
                    True,
                )
        else:
            yield _event("response.output_item.added", output_index=index, item=item), False
        yield _event("response.output_item.done", output_index=index, item=item), False
    done = _response(response_id, model, "completed", [i for _, i in items], _usage(reply))
    yield _event("response.completed", response=done), False


class _Handler(ScriptedHandler["ScriptedResponses"]):
    server_version = "ScriptedResponses/1.0"
    request_id_header = "x-request-id"
    timeout = 60

    def _error(self, status: int, message: str) -> None:
        kind = "invalid_request_error" if status < 500 else "server_error"
        self._send_json(status, {"error": {"message": message, "type": kind, "code": None}})

    def do_GET(self) -> None:
        route = self._record(None)
        if route == "/v1/models":
            model = {"id": self.server.owner.model, "object": "model", "owned_by": "scripted"}
            self._send_json(200, {"object": "list", "data": [model]})
        else:
            self._error(404, f"no route for GET {route}")

    def do_POST(self) -> None:
        body, route = self._read_json()
        if route != "/v1/responses":
            self._error(404, f"no route for POST {route}")
            return
        if not isinstance(body, dict):
            self._error(400, "body must be a JSON object")
            return
        owner = self.server.owner
        owner._note_model_request(body)
        reply = owner._plan(body)
        violation = unoffered_call(body, reply)
        if violation is not None:
            owner._note_violation(violation)
            self._error(400, f"{VIOLATION}: {violation}")
            return
        if reply.error_status is not None:
            self._error(reply.error_status, API_ERROR_MESSAGE)
            return
        response_id = owner._ids.next("resp_scripted_")
        model = str(body.get("model") or owner.model)
        items = _output_items(reply, owner._ids.next, _custom_tools(body), _namespaces(body))
        if body.get("stream"):
            self._stream(_sse_events(reply, response_id, model, items), reply.delta_delay_s)
            return
        output = [i for _, i in items]
        self._send_json(200, _response(response_id, model, "completed", output, _usage(reply)))


class ScriptedResponses(ScriptedServer[Reply]):
    """Context manager running the scripted Responses API (see the module docstring)."""

    _handler = _Handler
    _thread_name = "scripted-responses"
    _url_path = "/v1"

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        model: str = DEFAULT_MODEL,
        responder: Callable[[dict[str, Any]], Reply | None] | None = None,
    ) -> None:
        super().__init__(host, port, responder=responder, planner=plan_responses_reply)
        self.model = model
