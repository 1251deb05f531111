"""A scripted **Gemini API** on 127.0.0.1, for gemini-cli (``--acp``) offline.

Stdlib only, built on :mod:`tests.support._scripted_http` like the others::

    with ScriptedGemini() as llm:
        llm.base_url      # http://127.0.0.1:PORT  (GOOGLE_GEMINI_BASE_URL)
        llm.requests      # bodies of every generate call, in arrival order

Endpoints
---------
* ``POST /v1beta/models/<model>:streamGenerateContent?alt=sse``: server-sent events, each
  ``data: {"candidates": [{"content": {"role": "model", "parts": [...]}, "index": 0}]}``: text
  deltas as ``{"text"}`` parts, reasoning as ``{"text", "thought": true}`` parts, a tool call as
  one ``{"functionCall": {"name", "args"}}`` part; the last chunk carries
  ``finishReason: "STOP"`` (``MAX_TOKENS`` for ``MAX_TOKENS``) and ``usageMetadata``.
* ``POST .../<model>:generateContent``: the same reply as one JSON object; when the request
  asks for JSON (``generationConfig.responseJsonSchema`` / ``responseSchema``, gemini-cli's
  routing and next-speaker side calls) a JSON text filling the schema's required fields
  (``next_speaker`` is ``"user"``).
* ``POST .../<model>:countTokens`` -> ``{"totalTokens": 100}``.

Choosing the reply
------------------
The same keywords and replies as :mod:`tests.support.llm_openai`, read from the last text part
of the last ``role: "user"`` content. When the last content holds ``functionResponse`` parts,
the reply quotes them (:data:`TOOL_SAID` + the response's ``output``). The shell tool is
picked from the request's ``functionDeclarations``: gemini-cli's
``run_shell_command {command, description}``.

A model can call only the tools a request offers it: a reply calling a function not among
the request's ``functionDeclarations`` is a violation of the script, answered HTTP 400 and
recorded in ``ScriptedGemini.violations``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from tests.support._scripted_http import (
    VIOLATION,
    ScriptedHandler,
    ScriptedServer,
    sse_event,
    unoffered_call,
)
from tests.support.llm_openai import (
    API_ERROR_MESSAGE,
    PROMPT_TOKENS,
    Reply,
    ToolCall,
    plan_reply_from,
)

__all__ = ["SHELL_DESCRIPTION", "ScriptedGemini", "last_user_text", "plan_gemini_reply"]

SHELL_DESCRIPTION = "Run a command for the scripted model."


def _contents(body: Any) -> list[dict[str, Any]]:
    contents = body.get("contents") if isinstance(body, dict) else None
    if not isinstance(contents, list):
        return []
    return [c for c in contents if isinstance(c, dict)]


def _parts(content: dict[str, Any]) -> list[dict[str, Any]]:
    parts = content.get("parts")
    return [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []


def last_user_text(body: Any) -> str:
    """The last text part of the last ``role: "user"`` content ("" when none)."""
    for content in reversed(_contents(body)):
        if content.get("role", "user") != "user":
            continue
        texts = [str(p["text"]) for p in _parts(content) if isinstance(p.get("text"), str)]
        if texts:
            return texts[-1]
        if any("functionResponse" in p for p in _parts(content)):
            return ""
    return ""


def _function_outputs(body: Any) -> list[str]:
    contents = _contents(body)
    if not contents:
        return []
    outputs = []
    for part in _parts(contents[-1]):
        response = part.get("functionResponse")
        if isinstance(response, dict):
            inner = response.get("response")
            if isinstance(inner, dict):
                value = inner.get("output", inner.get("error", inner))
            else:
                value = inner
            outputs.append(value if isinstance(value, str) else json.dumps(value))
    return outputs


def _tool_names(body: Any) -> set[str]:
    tools = body.get("tools") if isinstance(body, dict) else None
    names: set[str] = set()
    for tool in tools if isinstance(tools, list) else []:
        declarations = tool.get("functionDeclarations") if isinstance(tool, dict) else None
        for declaration in declarations if isinstance(declarations, list) else []:
            if isinstance(declaration, dict) and isinstance(declaration.get("name"), str):
                names.add(declaration["name"])
    return names


def _shell_call(body: Any, command: str) -> ToolCall:
    if "run_shell_command" in _tool_names(body):
        return ToolCall("run_shell_command", {"command": command, "description": SHELL_DESCRIPTION})
    return ToolCall("bash", {"command": command})


def plan_gemini_reply(body: Any) -> Reply:
    """The scripted reply for one Gemini generate request (see the module docstring)."""
    return plan_reply_from(
        _function_outputs(body), last_user_text(body), lambda command: _shell_call(body, command)
    )


def _usage(reply: Reply) -> dict[str, Any]:
    thoughts = sum(len(p.chunks) for p in reply.parts if p.kind == "reasoning")
    output = sum(len(p.chunks) for p in reply.parts if p.kind == "text") + len(reply.tool_calls)
    return {
        "promptTokenCount": PROMPT_TOKENS,
        "candidatesTokenCount": output,
        "thoughtsTokenCount": thoughts,
        "totalTokenCount": PROMPT_TOKENS + output + thoughts,
    }


def _finish(reply: Reply) -> str:
    return "MAX_TOKENS" if reply.finish_reason == "length" else "STOP"


def _candidate(parts: list[dict[str, Any]], finish: str | None = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    return candidate


def _reply_parts(reply: Reply) -> Iterator[tuple[dict[str, Any], bool]]:
    for part in reply.parts:
        for chunk in part.chunks:
            if part.kind == "text":
                yield {"text": chunk}, True
            else:
                yield {"text": chunk, "thought": True}, True
    for call in reply.tool_calls:
        yield {"functionCall": {"name": call.name, "args": call.arguments}}, False


def _sse_events(reply: Reply, model: str) -> Iterator[tuple[str, bool]]:
    for part, is_delta in _reply_parts(reply):
        chunk = {"candidates": [_candidate([part])], "modelVersion": model}
        yield sse_event(json.dumps(chunk)), is_delta
    last = {
        "candidates": [_candidate([{"text": ""}], _finish(reply))],
        "usageMetadata": _usage(reply),
        "modelVersion": model,
    }
    yield sse_event(json.dumps(last)), False


def _fill(schema: Any) -> Any:
    """A JSON value of ``schema``'s shape, required fields only (``next_speaker``: ``user``)."""
    if not isinstance(schema, dict):
        return ""
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        found = schema.get("properties")
        props: dict[str, Any] = found if isinstance(found, dict) else {}
        required = schema.get("required") or list(props)
        out: dict[str, Any] = {}
        for key in required:
            out[key] = "user" if key == "next_speaker" else _fill(props.get(key))
        return out
    if schema.get("enum"):
        return schema["enum"][0]
    return {"array": [], "integer": 0, "number": 0, "boolean": False}.get(kind, "scripted")


class _Handler(ScriptedHandler["ScriptedGemini"]):
    server_version = "ScriptedGemini/1.0"
    request_id_header = "x-request-id"
    timeout = 60

    def _error(self, status: int, message: str) -> None:
        body = {"error": {"code": status, "message": message, "status": "INVALID_ARGUMENT"}}
        self._send_json(status, body)

    def do_POST(self) -> None:
        body, route = self._read_json()
        model, _, method = route.rsplit("/", 1)[-1].partition(":")
        if not isinstance(body, dict):
            self._error(400, "body must be a JSON object")
            return
        if method == "countTokens":
            self._send_json(200, {"totalTokens": PROMPT_TOKENS})
            return
        if method not in ("streamGenerateContent", "generateContent"):
            self._error(404, f"no route for POST {route}")
            return
        owner = self.server.owner
        owner._note_model_request(body)
        config = body.get("generationConfig")
        schema = None
        if isinstance(config, dict):
            schema = config.get("responseJsonSchema") or config.get("responseSchema")
        if schema is not None and method == "generateContent":
            text = json.dumps(_fill(schema))
            reply_json = {"candidates": [_candidate([{"text": text}], "STOP")]}
            self._send_json(200, {**reply_json, "usageMetadata": _usage(Reply())})
            return
        reply = owner._plan(body)
        violation = unoffered_call((c.name for c in reply.tool_calls), _tool_names(body))
        if violation is not None:
            owner._note_violation(violation)
            self._error(400, f"{VIOLATION}: {violation}")
            return
        if reply.error_status is not None:
            self._error(reply.error_status, API_ERROR_MESSAGE)
            return
        if method == "streamGenerateContent":
            self._stream(_sse_events(reply, model), reply.delta_delay_s)
            return
        parts = [p for p, _ in _reply_parts(reply)]
        merged = {"candidates": [_candidate(parts, _finish(reply))], "usageMetadata": _usage(reply)}
        self._send_json(200, merged)


class ScriptedGemini(ScriptedServer[Reply]):
    """Context manager running the scripted Gemini API (see the module docstring)."""

    _handler = _Handler
    _thread_name = "scripted-gemini"
    _url_path = ""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        responder: Callable[[dict[str, Any]], Reply | None] | None = None,
    ) -> None:
        super().__init__(host, port, responder=responder, planner=plan_gemini_reply)
