"""A scripted OpenAI-compatible Chat Completions API on 127.0.0.1 for driving real agents offline.

Stdlib only: a ``ThreadingHTTPServer`` in a daemon thread on an ephemeral port::

    with ScriptedOpenAI() as llm:
        llm.base_url      # http://127.0.0.1:PORT/v1  (give it to the agent's provider config)
        ...
        llm.requests      # bodies of every POST /v1/chat/completions, in arrival order

The xcsh family (xcsh, omp, pi) talks to it with ``api: openai-completions``
(see ``tests/support/peers.py``).

Endpoints
---------
* ``POST /v1/chat/completions``: with ``"stream": true`` answers server-sent events like OpenAI
  (chunked transfer encoding; ``data: {chat.completion.chunk}`` lines): a first chunk with
  ``delta.role``, then ``choices[0].delta.reasoning_content`` (field name configurable),
  ``delta.content`` and ``delta.tool_calls[...]`` chunks (the first chunk of a call carries
  ``index``, ``id``, ``type`` and ``function.name`` with empty arguments, the following ones
  ``function.arguments`` fragments: the JSON arguments split into several pieces), then a chunk
  with an empty delta and ``finish_reason`` (``stop``, ``tool_calls`` or ``length``), a usage
  chunk (``choices: []``, ``usage.prompt_tokens``/``completion_tokens``/``total_tokens``) and
  ``data: [DONE]``. Without ``stream`` it answers one ``chat.completion`` JSON object.
* ``GET /v1/models`` (the one model, :data:`DEFAULT_MODEL` or the configured id),
  ``GET /v1/models/<id>``.
* anything else: 404 with an OpenAI error body.

Choosing the reply
------------------
1. The last message has ``role: "tool"``: one text reply with one line per trailing tool
   message: :data:`TOOL_SAID` + the first :data:`TOOL_RESULT_QUOTE_CHARS` (200) characters of
   the tool result, e.g. ``Tool said: hi``; ``finish_reason`` ``stop``.
2. The last user message is a compaction/summary request (it starts with
   :data:`COMPACTION_MARKER` ``<conversation>``, which both omp and pi put first): the text
   :data:`SUMMARY_TEXT`. This check comes before the keywords because the serialized
   conversation inside that prompt repeats earlier keywords.
3. Otherwise keywords in the text of the last ``role: "user"`` message (string content or
   ``{"type": "text"}`` parts), first match wins:

   ``HTTP_<status>`` (e.g. :data:`HTTP_400`)
       HTTP ``status`` with an OpenAI JSON error body (``{"error": {"message":
       API_ERROR_MESSAGE, "type": ..., "code": ...}}``). 400 fails fast; the agents retry 5xx
       and 429 by themselves (omp 10 times from 500 ms, pi 3 times from 2 s, doubling), so
       shorten their ``retry`` settings when a test uses them.
   ``CUT_STREAM``
       a stream that breaks before any content: the first chunk (``delta.role``), then the
       connection is dropped. Both agents retry such a model call by themselves
       (``auto_retry_start``), past their HTTP clients' own retries (which retry only
       failures with an HTTP status). omp does not retry a call that already streamed
       text, which is why nothing is streamed.
   ``FAIL_FIRST_<n>_<status>`` / ``FAIL_FIRST_<n>_CUT`` (e.g. ``FAIL_FIRST_2_CUT``)
       the first ``n`` requests with this last user message get HTTP ``status`` as above,
       or the broken stream of ``CUT_STREAM``; the agent's next retry (the same last user
       message) gets the reply the rest of the prompt asks for. omp retries a failed
       request once in its HTTP layer before its session retries (``n`` = 2 reaches
       those), pi not at all when its ``retry.provider.maxRetries`` is 0. Checked before
       everything else; the only rule with state (per server).
   ``RUN_BASH <command>``
       text preamble (:data:`TOOL_PREAMBLE`), then a ``bash`` tool call with arguments
       ``{"command": <rest of the line>}``; ``finish_reason`` ``tool_calls``.
   ``READ_FILE <path>``
       preamble, then a ``read`` tool call with ``{"path": <rest of the line>}``.
   ``WRITE_FILE <path> [content]``
       preamble, then a ``write`` tool call with ``{"path": <path>, "content": <rest of the
       line, or WRITE_FILE_DEFAULT_CONTENT when empty>}``.
   ``PARALLEL_TOOLS``
       preamble, then two ``bash`` tool calls in one message (:data:`PARALLEL_COMMANDS`).
   ``CALL_TOOL <name> [json]``
       preamble, then a call of tool ``name`` (a host tool the client published, omp's
       ``todo``) with the JSON object that follows as its arguments (``{}`` if none).
   ``NAME_MODEL``
       :data:`MODEL_SAYS` + the ``model`` the request asked for, e.g. ``I am fake-model-2.``
       (so a model switch shows in the reply).
   ``SLOW_STREAM [count] [delay_ms]``
       ``count`` text deltas (default :data:`SLOW_STREAM_DELTAS` = 200) ``delay_ms`` apart
       (default 50); stops as soon as the client disconnects or the server closes.
   ``MAX_TOKENS``
       a text (:data:`MAX_TOKENS_TEXT`), then ``finish_reason`` ``length``.
   (none of these)
       :data:`DEFAULT_TEXT` (``"Hello from the scripted model."``) in several deltas.

   ``THINK_FIRST`` may be combined with any of the above except ``HTTP_<status>``: the reply
   then starts with reasoning deltas (:data:`THINKING_TEXT`) in ``delta.reasoning_content``
   (omp and pi accept ``reasoning_content``, ``reasoning`` and ``reasoning_text``; pick one
   with ``ScriptedOpenAI(reasoning_field=...)``).

Only what the request offers
----------------------------
A model can call only the tools a request offers it, so every tool call of a reply (the
keywords' and a ``responder``'s) is made the way the request offers that tool
(:func:`as_offered`): by its name when it is in the request's ``tools`` (with omp's
required intent field ``i`` filled in when the script leaves it out); for a tool the
request names only as a device ``xd://<name>`` (omp tells the model to run such tools by
writing their JSON arguments there), as a ``write`` of the arguments to ``xd://<name>``.
A call of a tool the request does not offer at all is a violation of the script: the
server answers HTTP 400 (message :data:`VIOLATION` …) and records it in
``ScriptedOpenAI.violations``.

Usage is deterministic: ``prompt_tokens`` :data:`PROMPT_TOKENS` (100), ``completion_tokens`` =
number of content deltas sent (reasoning deltas also counted in
``completion_tokens_details.reasoning_tokens``). Completion ids are ``chatcmpl-scripted-<n>``
and tool call ids ``call_scripted_<n>`` (counters per server).

The server never keeps a client waiting: every reply is finite, write errors from clients that
went away are swallowed, and leaving the ``with`` block stops slow streams and closes all open
connections. Never bind it to the ports local-LLM probes use (11434, 8080, 1234): port 0 is
the default.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from tests.support._scripted_http import (
    DEFAULT_TEXT,
    MAX_TOKENS,
    MAX_TOKENS_TEXT,
    PARALLEL_COMMANDS,
    PARALLEL_TOOLS,
    RUN_BASH,
    RUN_BASH_RE,
    SLOW_STREAM,
    SLOW_STREAM_DELAY_S,
    THINK_FIRST,
    THINKING_TEXT,
    TOOL_PREAMBLE,
    TOOL_RESULT_QUOTE_CHARS,
    TOOL_SAID,
    VIOLATION,
    WRITE_FILE,
    WRITE_FILE_RE,
    RecordedRequest,
    ScriptedHandler,
    ScriptedServer,
    slow_stream,
    split_text,
    sse_event,
)

__all__ = [
    "API_ERROR_MESSAGE",
    "CALL_TOOL",
    "COMPACTION_MARKER",
    "CUT_STREAM",
    "DEFAULT_MODEL",
    "DEFAULT_TEXT",
    "DEVICE_PREFIX",
    "DEVICE_WRITER",
    "FAIL_FIRST",
    "HTTP_400",
    "MAX_TOKENS",
    "MAX_TOKENS_TEXT",
    "MODEL_SAYS",
    "NAME_MODEL",
    "PARALLEL_COMMANDS",
    "PARALLEL_TOOLS",
    "PROMPT_TOKENS",
    "READ_FILE",
    "RUN_BASH",
    "SLOW_STREAM",
    "SLOW_STREAM_DELAY_S",
    "SLOW_STREAM_DELTAS",
    "SUMMARY_TEXT",
    "THINKING_TEXT",
    "THINK_FIRST",
    "TOOL_PREAMBLE",
    "TOOL_RESULT_QUOTE_CHARS",
    "TOOL_SAID",
    "VIOLATION",
    "WRITE_FILE",
    "WRITE_FILE_DEFAULT_CONTENT",
    "Part",
    "RecordedRequest",
    "Reply",
    "ScriptedOpenAI",
    "ToolCall",
    "as_offered",
    "last_user_text",
    "offered_tools",
    "plan_reply",
    "trailing_tool_results",
]

# --- keywords (in the last user message; the shared ones come from _scripted_http) ------------
READ_FILE = "READ_FILE"
HTTP_400 = "HTTP_400"
FAIL_FIRST = "FAIL_FIRST"
CUT_STREAM = "CUT_STREAM"
COMPACTION_MARKER = "<conversation>"
CALL_TOOL = "CALL_TOOL"
NAME_MODEL = "NAME_MODEL"

# --- how omp offers tools ----------------------------------------------------------------------
DEVICE_PREFIX = "xd://"
DEVICE_WRITER = "write"
INTENT_FIELD = "i"
INTENT_TEXT = "scripted intent"

# --- canned content ----------------------------------------------------------------------------
SUMMARY_TEXT = (
    "## Goal\nAnswer the user's scripted prompts.\n\n"
    "## Progress\n- The scripted model replied to every prompt.\n\n"
    "## Next Steps\n- Wait for the next prompt."
)
WRITE_FILE_DEFAULT_CONTENT = "Written by the scripted model.\n"
API_ERROR_MESSAGE = "Scripted error"
SLOW_STREAM_DELTAS = 200
PROMPT_TOKENS = 100
DEFAULT_MODEL = "fake-model"
MODEL_SAYS = "I am "

ReasoningField = Literal["reasoning_content", "reasoning", "reasoning_text"]

_HTTP_STATUS_RE = re.compile(r"\bHTTP_([1-5]\d\d)\b")
_FAIL_FIRST_RE = re.compile(re.escape(FAIL_FIRST) + r"_(\d+)_([1-5]\d\d|CUT)\b")
_READ_FILE_RE = re.compile(re.escape(READ_FILE) + r"[ \t]+([^\n]+)")
_CALL_TOOL_RE = re.compile(re.escape(CALL_TOOL) + r"[ \t]+([A-Za-z0-9_.-]+)[ \t]*([^\n]*)")
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
}


# --- reply model -------------------------------------------------------------------------------
@dataclass(frozen=True)
class ToolCall:
    """One function call of a scripted reply (arguments are streamed in several fragments)."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Part:
    """One part of a scripted reply: ``chunks`` are the deltas of a text or reasoning part."""

    kind: Literal["text", "reasoning"]
    chunks: tuple[str, ...] = ()


@dataclass(frozen=True)
class Reply:
    """What the server answers to one ``POST /v1/chat/completions``.

    Reasoning and text ``parts`` are streamed in order, then the ``tool_calls``.
    ``error_status`` set: answer that HTTP status with a JSON error instead; ``cut``: break
    the stream after the parts.
    """

    parts: tuple[Part, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: Literal["stop", "tool_calls", "length"] = "stop"
    delta_delay_s: float = 0.0
    error_status: int | None = None
    error_message: str = API_ERROR_MESSAGE
    cut: bool = False
    """Drop the connection after the parts, before the tool calls and the finish."""


# --- request inspection helpers ----------------------------------------------------------------
def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(p.get("text", ""))
            for p in content
            if isinstance(p, dict) and p.get("type") in ("text", "input_text")
        )
    return ""


def _messages(body: Any) -> list[dict[str, Any]]:
    messages = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(messages, list):
        return []
    return [m for m in messages if isinstance(m, dict)]


def last_user_text(body: Any) -> str:
    """The text of the last ``role: "user"`` message of a request body ("" when none)."""
    for message in reversed(_messages(body)):
        if message.get("role") == "user":
            return _content_text(message.get("content"))
    return ""


def trailing_tool_results(body: Any) -> list[dict[str, Any]]:
    """The ``role: "tool"`` messages at the end of the conversation, in order."""
    results: list[dict[str, Any]] = []
    for message in reversed(_messages(body)):
        if message.get("role") != "tool":
            break
        results.append(message)
    results.reverse()
    return results


def _text(text: str, parts: int = 4) -> Part:
    return Part(kind="text", chunks=split_text(text, parts))


_CUT_REPLY = Reply(cut=True)


def _tool_reply(*calls: ToolCall) -> Reply:
    return Reply(parts=(_text(TOOL_PREAMBLE, 2),), tool_calls=calls, finish_reason="tool_calls")


def offered_tools(body: Any) -> dict[str, dict[str, Any]]:
    """The tools a request offers the model: name → JSON Schema of the arguments."""
    tools = body.get("tools") if isinstance(body, dict) else None
    offered: dict[str, dict[str, Any]] = {}
    for tool in tools if isinstance(tools, list) else []:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            parameters = function.get("parameters")
            offered[function["name"]] = parameters if isinstance(parameters, dict) else {}
    return offered


def _tool_names(body: Any) -> set[str]:
    return set(offered_tools(body))


def _mentions_device(body: Any, name: str) -> bool:
    """The request tells the model about the device ``xd://<name>`` (omp's prompt)."""
    device = re.compile(re.escape(DEVICE_PREFIX + name) + r"(?![A-Za-z0-9_.-])")
    return device.search(json.dumps(_messages(body), ensure_ascii=False)) is not None


def _with_intent(call: ToolCall, schema: dict[str, Any]) -> ToolCall:
    """omp asks for the model's intent in a required string ``i`` of every tool."""
    required = schema.get("required")
    if not isinstance(required, list) or INTENT_FIELD not in required:
        return call
    if INTENT_FIELD in call.arguments:
        return call
    return replace(call, arguments={INTENT_FIELD: INTENT_TEXT, **call.arguments})


def as_offered(body: Any, reply: Reply) -> Reply | str:
    """``reply`` with each tool call made as the request offers the tool: called by its
    name (with omp's required intent field), or, for a tool the request names only as an
    ``xd://`` device (omp), a ``write`` of its JSON arguments to that device. A string
    says which call the request does not offer at all (the scripted model would cheat)."""
    if not reply.tool_calls:
        return reply
    offered = offered_tools(body)
    calls: list[ToolCall] = []
    for call in reply.tool_calls:
        as_device = (
            call.name not in offered
            and DEVICE_WRITER in offered
            and _mentions_device(body, call.name)
        )
        if as_device:
            content = json.dumps(call.arguments)
            call = ToolCall(DEVICE_WRITER, {"path": DEVICE_PREFIX + call.name, "content": content})
        if call.name not in offered:
            return (
                f"the script calls the tool {call.name!r}, which the request does not offer "
                f"(offered: {', '.join(sorted(offered)) or 'none'})"
            )
        calls.append(_with_intent(call, offered[call.name]))
    return replace(reply, tool_calls=tuple(calls))


SHELL_DESCRIPTION = "Run a command for the scripted model."


def _shell_call(body: Any, command: str) -> ToolCall:
    """``bash {command}`` (the xcsh family), or the shell tool the request offers instead:
    qwen-code's ``run_shell_command {command, description}``."""
    if "run_shell_command" in _tool_names(body) and "bash" not in _tool_names(body):
        return ToolCall("run_shell_command", {"command": command, "description": SHELL_DESCRIPTION})
    return ToolCall("bash", {"command": command})


def plan_reply(body: Any) -> Reply:
    """The scripted reply for one Chat Completions request body (see the module docstring)."""
    results = trailing_tool_results(body)
    if results:
        lines = "\n".join(
            TOOL_SAID + _content_text(r.get("content"))[:TOOL_RESULT_QUOTE_CHARS] for r in results
        )
        return Reply(parts=(_text(lines),))

    prompt = last_user_text(body)
    if prompt.lstrip().startswith(COMPACTION_MARKER):
        return Reply(parts=(_text(SUMMARY_TEXT, 6),))
    if match := _HTTP_STATUS_RE.search(prompt):
        return Reply(error_status=int(match.group(1)))
    if CUT_STREAM in prompt:
        return _CUT_REPLY

    reply: Reply
    if match := RUN_BASH_RE.search(prompt):
        reply = _tool_reply(_shell_call(body, match.group(1).strip()))
    elif match := _READ_FILE_RE.search(prompt):
        reply = _tool_reply(ToolCall("read", {"path": match.group(1).strip()}))
    elif match := WRITE_FILE_RE.search(prompt):
        content = match.group(2) or WRITE_FILE_DEFAULT_CONTENT
        reply = _tool_reply(ToolCall("write", {"path": match.group(1), "content": content}))
    elif match := _CALL_TOOL_RE.search(prompt):
        arguments = json.loads(match.group(2)) if match.group(2).strip() else {}
        reply = _tool_reply(ToolCall(match.group(1), arguments))
    elif NAME_MODEL in prompt:
        reply = Reply(parts=(_text(f"{MODEL_SAYS}{body.get('model')}.", 3),))
    elif PARALLEL_TOOLS in prompt:
        reply = _tool_reply(*(ToolCall("bash", {"command": c}) for c in PARALLEL_COMMANDS))
    elif slow := slow_stream(prompt, SLOW_STREAM_DELTAS):
        chunks, delay = slow
        reply = Reply(parts=(Part(kind="text", chunks=chunks),), delta_delay_s=delay)
    elif MAX_TOKENS in prompt:
        reply = Reply(parts=(_text(MAX_TOKENS_TEXT),), finish_reason="length")
    else:
        reply = Reply(parts=(_text(DEFAULT_TEXT, 5),))
    if THINK_FIRST in prompt:
        thinking = Part(kind="reasoning", chunks=split_text(THINKING_TEXT, 3))
        reply = Reply(
            parts=(thinking, *reply.parts),
            tool_calls=reply.tool_calls,
            finish_reason=reply.finish_reason,
            delta_delay_s=reply.delta_delay_s,
        )
    return reply


# --- chunk generation --------------------------------------------------------------------------
def _json_fragments(arguments: dict[str, Any]) -> tuple[str, ...]:
    return split_text(json.dumps(arguments), 4)


def plan_reply_from(
    tool_outputs: list[str], user_text: str, shell: Callable[[str], ToolCall]
) -> Reply:
    """The reply to a request in another wire format, planned as for chat completions
    (answer the tool outputs if any, else the user's last words), with its ``bash`` call
    made that format's shell tool by ``shell(command)``."""
    if tool_outputs:
        messages = [{"role": "tool", "content": o[:TOOL_RESULT_QUOTE_CHARS]} for o in tool_outputs]
    else:
        messages = [{"role": "user", "content": user_text}]
    reply = plan_reply({"messages": messages})
    calls = tuple(
        shell(str(call.arguments.get("command", ""))) if call.name == "bash" else call
        for call in reply.tool_calls
    )
    return replace(reply, tool_calls=calls)


def _usage(reply: Reply) -> dict[str, Any]:
    reasoning = sum(len(p.chunks) for p in reply.parts if p.kind == "reasoning")
    completion = sum(len(p.chunks) for p in reply.parts) + sum(
        len(_json_fragments(c.arguments)) for c in reply.tool_calls
    )
    return {
        "prompt_tokens": PROMPT_TOKENS,
        "completion_tokens": completion,
        "total_tokens": PROMPT_TOKENS + completion,
        "prompt_tokens_details": {"cached_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": reasoning},
    }


_ROLE_DELTA: dict[str, Any] = {"role": "assistant", "content": ""}


def _stream_chunks(
    reply: Reply, reasoning_field: str, tool_ids: list[str]
) -> Iterator[tuple[dict[str, Any] | None, list[dict[str, Any]], bool]]:
    """(delta or None for the usage chunk, finish/usage extras, is_content_delta) per chunk."""
    yield _ROLE_DELTA, [], False
    for part in reply.parts:
        key = "content" if part.kind == "text" else reasoning_field
        for chunk in part.chunks:
            yield {key: chunk}, [], True
    for index, (call, call_id) in enumerate(zip(reply.tool_calls, tool_ids, strict=True)):
        yield (
            {
                "tool_calls": [
                    {
                        "index": index,
                        "id": call_id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": ""},
                    }
                ]
            },
            [],
            False,
        )
        for fragment in _json_fragments(call.arguments):
            yield (
                {"tool_calls": [{"index": index, "function": {"arguments": fragment}}]},
                [],
                True,
            )
    yield {}, [{"finish_reason": reply.finish_reason}], False
    yield None, [{"usage": _usage(reply)}], False


@dataclass(frozen=True)
class _Completion:
    """What every object of one completion repeats."""

    id: str
    created: int
    model: str

    def envelope(self, object_type: str) -> dict[str, Any]:
        return {"id": self.id, "object": object_type, "created": self.created, "model": self.model}


def _sse_events(
    reply: Reply, completion: _Completion, reasoning_field: str, tool_ids: list[str]
) -> Iterator[tuple[str, bool]]:
    """(server-sent event, is_content_delta) per ``chat.completion.chunk``, then ``[DONE]``
    (only the role and the parts' chunks for a ``cut`` reply)."""
    for delta, extras, is_delta in _stream_chunks(reply, reasoning_field, tool_ids):
        if reply.cut and not is_delta and delta != _ROLE_DELTA:
            return
        chunk: dict[str, Any] = {**completion.envelope("chat.completion.chunk"), "choices": []}
        if delta is not None:
            choice: dict[str, Any] = {"index": 0, "delta": delta, "finish_reason": None}
            for extra in extras:
                choice.update(extra)
            chunk["choices"] = [choice]
        else:
            for extra in extras:
                chunk.update(extra)
        yield sse_event(json.dumps(chunk)), is_delta
    yield sse_event("[DONE]"), False


def _final_message(reply: Reply, reasoning_field: str, tool_ids: list[str]) -> dict[str, Any]:
    text = "".join("".join(p.chunks) for p in reply.parts if p.kind == "text")
    message: dict[str, Any] = {"role": "assistant", "content": text}
    reasoning = "".join("".join(p.chunks) for p in reply.parts if p.kind == "reasoning")
    if reasoning:
        message[reasoning_field] = reasoning
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
            }
            for call, call_id in zip(reply.tool_calls, tool_ids, strict=True)
        ]
    return message


# --- HTTP server -------------------------------------------------------------------------------
class _Handler(ScriptedHandler["ScriptedOpenAI"]):
    server_version = "ScriptedOpenAI/1.0"
    request_id_header = "x-request-id"
    timeout = 60  # idle keep-alive connections never pin a handler thread forever

    def _error(self, status: int, message: str, code: str | None = None) -> None:
        error_type = _ERROR_TYPES.get(status, "server_error" if status >= 500 else "api_error")
        self._send_json(
            status,
            {"error": {"message": message, "type": error_type, "param": None, "code": code}},
        )

    def do_GET(self) -> None:
        route = self._record(None)
        model = self.server.owner.model
        if route == "/v1/models":
            self._send_json(200, {"object": "list", "data": [_model_info(model)]})
        elif route.startswith("/v1/models/"):
            self._send_json(200, _model_info(route.rsplit("/", 1)[1]))
        else:
            self._error(404, f"no route for GET {route}", "not_found")

    def do_POST(self) -> None:
        body, route = self._read_json()
        if route != "/v1/chat/completions":
            self._error(404, f"no route for POST {route}", "not_found")
            return
        if not isinstance(body, dict):
            self._error(400, "body must be a JSON object", "invalid_json")
            return
        self.server.owner._note_model_request(body)
        self._completions(body)

    def _completions(self, body: dict[str, Any]) -> None:
        owner = self.server.owner
        reply = as_offered(body, owner._plan(body))
        if isinstance(reply, str):
            owner._note_violation(reply)
            self._error(400, f"{VIOLATION}: {reply}", "scripted_violation")
            return
        if reply.error_status is not None:
            self._error(reply.error_status, reply.error_message, f"scripted_{reply.error_status}")
            return
        completion = _Completion(
            id=owner._ids.next("chatcmpl-scripted-"),
            created=int(time.time()),
            model=str(body.get("model") or owner.model),
        )
        tool_ids = [owner._ids.next("call_scripted_") for _ in reply.tool_calls]
        if body.get("stream"):
            events = _sse_events(reply, completion, owner.reasoning_field, tool_ids)
            self._stream(events, reply.delta_delay_s, cut=reply.cut)
            return
        choice = {
            "index": 0,
            "message": _final_message(reply, owner.reasoning_field, tool_ids),
            "finish_reason": reply.finish_reason,
        }
        final = completion.envelope("chat.completion")
        self._send_json(200, {**final, "choices": [choice], "usage": _usage(reply)})


def _model_info(model_id: str) -> dict[str, Any]:
    return {"id": model_id, "object": "model", "created": 1735689600, "owned_by": "scripted"}


class ScriptedOpenAI(ScriptedServer[Reply]):
    """Context manager running the scripted Chat Completions API (see the module docstring).

    ``responder`` (optional) is asked first for every ``POST /v1/chat/completions`` body; a
    ``Reply`` it returns overrides the keyword rules, ``None`` falls back to them.
    ``reasoning_field`` names the delta field that carries reasoning text.
    """

    _handler = _Handler
    _thread_name = "scripted-openai"
    _url_path = "/v1"

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        model: str = DEFAULT_MODEL,
        reasoning_field: ReasoningField = "reasoning_content",
        responder: Callable[[dict[str, Any]], Reply | None] | None = None,
    ) -> None:
        if port in (11434, 8080, 1234):
            raise ValueError(f"port {port} is probed by agents looking for local LLMs")
        super().__init__(host, port, responder=responder, planner=self._plan_reply)
        self.model = model
        self.reasoning_field: ReasoningField = reasoning_field
        self._failures: dict[str, int] = {}

    def _plan_reply(self, body: dict[str, Any]) -> Reply:
        """:func:`plan_reply`, once ``FAIL_FIRST_<n>_<failure>`` had its ``n`` failures."""
        prompt = last_user_text(body)
        match = _FAIL_FIRST_RE.search(prompt)
        if match is not None and not trailing_tool_results(body):
            with self._lock:
                failed = self._failures.get(prompt, 0)
                self._failures[prompt] = failed + 1
            if failed < int(match.group(1)):
                failure = match.group(2)
                return _CUT_REPLY if failure == "CUT" else Reply(error_status=int(failure))
        return plan_reply(body)
