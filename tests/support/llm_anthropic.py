"""A scripted Anthropic Messages API on 127.0.0.1 for driving real agents offline.

Stdlib only: a ``ThreadingHTTPServer`` in a daemon thread on an ephemeral port::

    with ScriptedAnthropic() as api:
        env = {"ANTHROPIC_BASE_URL": api.base_url, ...}   # http://127.0.0.1:PORT
        ...
        api.requests          # bodies of every POST /v1/messages, in arrival order

Endpoints
---------
* ``POST /v1/messages`` (any query, e.g. ``?beta=true``): streams server-sent events exactly like
  Anthropic when the body says ``"stream": true`` (``message_start`` with usage, ``ping``,
  ``content_block_start/delta/stop`` for ``text`` (``text_delta``), ``thinking``
  (``thinking_delta`` + ``signature_delta``) and ``tool_use`` (``input_json_delta`` split into
  several fragments), ``message_delta`` with ``stop_reason`` and usage, ``message_stop``) with
  chunked transfer encoding; otherwise answers one JSON message.
* ``POST /v1/messages/count_tokens`` -> ``{"input_tokens": 10}``.
* ``GET /v1/models`` and ``GET /v1/models/<id>``; ``HEAD``/``GET /api/hello`` -> 200.
* anything else -> 404 with an Anthropic error body.

Choosing the reply
------------------
The reply is chosen from the *last* user message of the request (messages with any other role,
including the ``role: "system"`` entries the Claude Code CLI sends, are skipped).
``<system-reminder>...</system-reminder>`` blocks are removed first. Then:

* the last user message holds ``tool_result`` blocks (and no user text after them): one text
  block, one line per result: :data:`TOOL_SAID` + the first 200 characters of the result
  content + `` [is_error=true|false]``, e.g.
  ``Tool said: (Bash completed with no output) [is_error=false]``; ``stop_reason`` ``end_turn``.
* otherwise keywords in that text, first match wins:

  ``API_ERROR [status]``
      HTTP ``status`` (default 500) with an Anthropic JSON error body
      (``{"type": "error", "error": {"type": "api_error", "message": API_ERROR_MESSAGE}}``).
  :data:`COMPACTION_REQUEST` (the Claude Code CLI's ``/compact`` asks for a summary with it)
      ``<analysis>...</analysis>`` then ``<summary>`` :data:`COMPACT_SUMMARY` ``</summary>``,
      the shape the CLI expects (its custom instructions follow ``Additional Instructions:``).
  ``RUN_BASH <command>``
      text preamble, then a ``Bash`` tool_use with input ``{"command": <rest of the line>,
      "description": BASH_DESCRIPTION}``; ``stop_reason`` ``tool_use``.
  ``WRITE_FILE <name> <content>``
      text preamble, then a ``Write`` tool_use with ``file_path`` = the cwd found in
      ``Primary working directory: <cwd>`` (any system text of the request) joined with
      ``name`` and ``content`` = rest of the line (taken literally); ``stop_reason`` ``tool_use``.
  ``CALL_TOOL <name> <json object>`` (one per line, several lines for several calls)
      text preamble, then a ``<name>`` tool_use per line with that input (a line whose JSON
      does not parse gets ``{"unparsed": <the text>}``); ``stop_reason`` ``tool_use``. For
      the Claude Code CLI's own tools (``TaskCreate``, ``TodoWrite``) and MCP tools
      (``mcp__<server>__<tool>``).
  ``WHICH_MODEL``
      :data:`MODEL_SAYS` with the request's ``model`` filled in, so a model switch shows.
  ``PARALLEL_TOOLS``
      text preamble, then two ``Bash`` tool_use blocks in one message (:data:`PARALLEL_COMMANDS`:
      ``echo one > one.txt`` and ``echo two > two.txt``); ``stop_reason`` ``tool_use``.
  ``SLOW_STREAM [count] [delay_ms]``
      ``count`` text deltas (default :data:`SLOW_STREAM_DELTAS` = 100) each
      ``delay_ms`` (default 50) apart; stops as soon as the client disconnects.
  ``MAX_TOKENS``
      a text, then ``stop_reason`` ``max_tokens``.
  (none of these)
      :data:`DEFAULT_TEXT` (``"Hello from the scripted model."``) in several deltas.

  ``THINK_FIRST`` may be combined with any of the above except ``API_ERROR``: the reply then
  starts with a thinking block (:data:`THINKING_TEXT`, signature :data:`THINKING_SIGNATURE`).

  Note: the Claude Code CLI answers a ``max_tokens`` stop by sending a meta user message
  ("Output token limit hit. Resume directly ...", up to 3 times), which gets the default text.
  Use ``responder`` to script replies the keywords cannot express.

A model can call only the tools a request offers it: a reply calling a tool not in the
request's ``tools`` is a violation of the script, answered HTTP 400 and recorded in
``ScriptedAnthropic.violations``.

Inspection
----------
``requests`` (message bodies), ``violations``, ``log`` (every HTTP request as
:class:`RecordedRequest`), ``aborted_streams`` (streams cut short by a client disconnect),
``wait_for_requests(n)``, and the pure helpers :func:`last_user_text`, :func:`tool_results`,
:func:`working_directory`, :func:`plan_reply`.

Usage is deterministic: ``message_start`` carries ``input_tokens`` :data:`INPUT_TOKENS` (10),
``output_tokens`` 1; ``message_delta`` carries ``input_tokens`` 10 and ``output_tokens`` = number
of content deltas sent. Message ids are ``msg_scripted_<n>`` and tool ids ``toolu_scripted_<n>``
(one counter per server).

The server never keeps a client waiting: every reply is finite, write errors from clients that
went away are swallowed, and leaving the ``with`` block stops slow streams and closes all open
connections.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
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
    unoffered_call,
)

__all__ = [
    "API_ERROR",
    "API_ERROR_MESSAGE",
    "BASH_DESCRIPTION",
    "CALL_TOOL",
    "COMPACTION_REQUEST",
    "COMPACT_SUMMARY",
    "DEFAULT_TEXT",
    "INPUT_TOKENS",
    "MAX_TOKENS",
    "MAX_TOKENS_TEXT",
    "MODEL_SAYS",
    "PARALLEL_COMMANDS",
    "PARALLEL_TOOLS",
    "RUN_BASH",
    "SLOW_STREAM",
    "SLOW_STREAM_DELAY_S",
    "SLOW_STREAM_DELTAS",
    "THINKING_SIGNATURE",
    "THINKING_TEXT",
    "THINK_FIRST",
    "TOOL_PREAMBLE",
    "TOOL_SAID",
    "WHICH_MODEL",
    "WRITE_FILE",
    "Block",
    "RecordedRequest",
    "Reply",
    "ScriptedAnthropic",
    "last_user_text",
    "plan_reply",
    "strip_system_reminders",
    "tool_results",
    "working_directory",
]

# --- keywords (the shared ones come from _scripted_http) ------------------------------------
API_ERROR = "API_ERROR"
CALL_TOOL = "CALL_TOOL"
WHICH_MODEL = "WHICH_MODEL"
COMPACTION_REQUEST = "Your task is to create a detailed summary of the conversation so far"

# --- canned content --------------------------------------------------------------------------
THINKING_SIGNATURE = "c2NyaXB0ZWQtc2lnbmF0dXJl"
BASH_DESCRIPTION = "Run a scripted command"
API_ERROR_MESSAGE = "Scripted internal error"
COMPACT_SUMMARY = "The user and the scripted model talked; nothing is left to do."
MODEL_SAYS = "Model {model} answers."
SLOW_STREAM_DELTAS = 100
INPUT_TOKENS = 10
DEFAULT_MODEL = "claude-opus-5-5"

_REMINDER_RE = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)
_CWD_RE = re.compile(r"Primary working directory:[ \t]*(\S[^\n]*)")
_API_ERROR_RE = re.compile(re.escape(API_ERROR) + r"(?:[ \t]+(\d{3}))?")
_CALL_TOOL_RE = re.compile(re.escape(CALL_TOOL) + r"[ \t]+(\S+)[ \t]*([^\n]*)")


# --- reply model -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Block:
    """One content block of a scripted reply.

    ``kind`` "text"/"thinking": ``chunks`` are the deltas. ``kind`` "tool_use": ``name`` and
    ``input`` (streamed as a few ``input_json_delta`` fragments).
    """

    kind: Literal["text", "thinking", "tool_use"]
    chunks: tuple[str, ...] = ()
    name: str = ""
    input: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Reply:
    """What the server answers to one ``POST /v1/messages``."""

    blocks: tuple[Block, ...] = ()
    stop_reason: str = "end_turn"
    delta_delay_s: float = 0.0
    error_status: int | None = None
    error_type: str = "api_error"
    error_message: str = API_ERROR_MESSAGE


# --- request inspection helpers --------------------------------------------------------------
def strip_system_reminders(text: str) -> str:
    """``text`` without ``<system-reminder>...</system-reminder>`` blocks, stripped."""
    return _REMINDER_RE.sub("", text).strip()


def _content_blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def _last_user_message(body: Any) -> list[dict[str, Any]]:
    messages = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(messages, list):
        return []
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            return _content_blocks(message.get("content"))
    return []


def _flatten_text(content: Any) -> str:
    parts = [str(b.get("text", "")) for b in _content_blocks(content) if b.get("type") == "text"]
    return "\n".join(parts)


def last_user_text(body: Any) -> str:
    """The text of the last ``role: "user"`` message, system reminders removed.

    Only text blocks count (tool results are ignored); blocks are joined with newlines.
    """
    texts = [
        strip_system_reminders(str(b.get("text", "")))
        for b in _last_user_message(body)
        if b.get("type") == "text"
    ]
    return "\n".join(t for t in texts if t)


def tool_results(body: Any) -> list[dict[str, Any]]:
    """The ``tool_result`` blocks of the last user message, in order."""
    return [b for b in _last_user_message(body) if b.get("type") == "tool_result"]


def working_directory(body: Any) -> str | None:
    """The cwd from ``Primary working directory: <cwd>`` in any system text of the request."""
    texts: list[str] = []
    if isinstance(body, dict):
        texts.append(_flatten_text(body.get("system")))
        for message in body.get("messages") or []:
            if isinstance(message, dict) and message.get("role") == "system":
                texts.append(_flatten_text(message.get("content")))
        # Older CLIs put the environment block into a user reminder instead.
        for message in body.get("messages") or []:
            if isinstance(message, dict) and message.get("role") == "user":
                texts.append(_flatten_text(message.get("content")))
    for text in texts:
        match = _CWD_RE.search(text)
        if match:
            return match.group(1).strip()
    return None


def _text(text: str, parts: int = 4) -> Block:
    return Block(kind="text", chunks=split_text(text, parts))


def _tool(name: str, tool_input: dict[str, Any]) -> Block:
    return Block(kind="tool_use", name=name, input=tool_input)


def _tool_result_text(result: dict[str, Any]) -> str:
    content = result.get("content")
    text = content if isinstance(content, str) else _flatten_text(content)
    is_error = "true" if result.get("is_error") else "false"
    return f"{TOOL_SAID}{text[:TOOL_RESULT_QUOTE_CHARS]} [is_error={is_error}]"


def _json_input(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text) if text.strip() else {}
    except ValueError:
        return {"unparsed": text}
    return value if isinstance(value, dict) else {"unparsed": text}


def plan_reply(body: Any) -> Reply:
    """The scripted reply for one Messages API request body (see the module docstring)."""
    blocks = _last_user_message(body)
    last_result = max(
        (i for i, b in enumerate(blocks) if b.get("type") == "tool_result"), default=-1
    )
    text_after_results = "\n".join(
        strip_system_reminders(str(b.get("text", "")))
        for b in blocks[last_result + 1 :]
        if b.get("type") == "text"
    ).strip()
    if last_result >= 0 and not text_after_results:
        lines = "\n".join(_tool_result_text(r) for r in tool_results(body))
        return Reply(blocks=(_text(lines),), stop_reason="end_turn")

    prompt = last_user_text(body)
    if match := _API_ERROR_RE.search(prompt):
        status = int(match.group(1) or 500)
        error_type = "overloaded_error" if status == 529 else "api_error"
        return Reply(error_status=status, error_type=error_type)
    if COMPACTION_REQUEST in prompt:
        summary = f"<analysis>Scripted analysis.</analysis>\n\n<summary>{COMPACT_SUMMARY}</summary>"
        return Reply(blocks=(_text(summary, 3),))

    thinking: tuple[Block, ...] = ()
    if THINK_FIRST in prompt:
        thinking = (Block(kind="thinking", chunks=split_text(THINKING_TEXT, 3)),)

    reply: Reply
    if match := RUN_BASH_RE.search(prompt):
        command = match.group(1).strip()
        reply = Reply(
            blocks=(
                _text(TOOL_PREAMBLE, 2),
                _tool("Bash", {"command": command, "description": BASH_DESCRIPTION}),
            ),
            stop_reason="tool_use",
        )
    elif match := WRITE_FILE_RE.search(prompt):
        name, content = match.group(1), match.group(2) or ""
        cwd = working_directory(body)
        path = name if cwd is None or name.startswith("/") else f"{cwd.rstrip('/')}/{name}"
        reply = Reply(
            blocks=(
                _text(TOOL_PREAMBLE, 2),
                _tool("Write", {"file_path": path, "content": content}),
            ),
            stop_reason="tool_use",
        )
    elif calls := _CALL_TOOL_RE.findall(prompt):
        reply = Reply(
            blocks=(
                _text(TOOL_PREAMBLE, 2),
                *(_tool(name, _json_input(text)) for name, text in calls),
            ),
            stop_reason="tool_use",
        )
    elif WHICH_MODEL in prompt:
        reply = Reply(blocks=(_text(MODEL_SAYS.format(model=body.get("model")), 3),))
    elif PARALLEL_TOOLS in prompt:
        reply = Reply(
            blocks=(
                _text(TOOL_PREAMBLE, 2),
                *(
                    _tool("Bash", {"command": c, "description": BASH_DESCRIPTION})
                    for c in PARALLEL_COMMANDS
                ),
            ),
            stop_reason="tool_use",
        )
    elif slow := slow_stream(prompt, SLOW_STREAM_DELTAS):
        chunks, delay = slow
        reply = Reply(blocks=(Block(kind="text", chunks=chunks),), delta_delay_s=delay)
    elif MAX_TOKENS in prompt:
        reply = Reply(blocks=(_text(MAX_TOKENS_TEXT),), stop_reason="max_tokens")
    else:
        reply = Reply(blocks=(_text(DEFAULT_TEXT, 5),))
    if thinking:
        reply = Reply(
            blocks=thinking + reply.blocks,
            stop_reason=reply.stop_reason,
            delta_delay_s=reply.delta_delay_s,
        )
    return reply


# --- event generation --------------------------------------------------------------------------
def _usage(output_tokens: int) -> dict[str, int]:
    return {
        "input_tokens": INPUT_TOKENS,
        "output_tokens": output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def _delta_count(reply: Reply) -> int:
    count = 0
    for block in reply.blocks:
        if block.kind == "tool_use":
            count += len(_json_fragments(block.input))
        elif block.kind == "thinking":
            count += len(block.chunks) + 1
        else:
            count += len(block.chunks)
    return count


def _json_fragments(tool_input: dict[str, Any]) -> tuple[str, ...]:
    return split_text(json.dumps(tool_input), 5)


def _final_content(reply: Reply, ids: list[str]) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    tool_ids = iter(ids)
    for block in reply.blocks:
        if block.kind == "text":
            content.append({"type": "text", "text": "".join(block.chunks)})
        elif block.kind == "thinking":
            content.append(
                {
                    "type": "thinking",
                    "thinking": "".join(block.chunks),
                    "signature": THINKING_SIGNATURE,
                }
            )
        else:
            content.append(
                {"type": "tool_use", "id": next(tool_ids), "name": block.name, "input": block.input}
            )
    return content


def _sse_events(
    reply: Reply, message_id: str, model: str, tool_ids: list[str]
) -> Iterator[tuple[str, bool]]:
    """(server-sent event, is_content_delta) for one streamed reply."""
    for name, data, is_delta in _message_events(reply, message_id, model, tool_ids):
        yield sse_event(json.dumps(data), event=name), is_delta


def _message_events(
    reply: Reply, message_id: str, model: str, tool_ids: list[str]
) -> Iterator[tuple[str, dict[str, Any], bool]]:
    """(event name, data, is_content_delta) for one streamed reply."""
    yield (
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": _usage(1),
            },
        },
        False,
    )
    yield "ping", {"type": "ping"}, False
    ids = iter(tool_ids)
    for index, block in enumerate(reply.blocks):
        start: dict[str, Any]
        if block.kind == "text":
            start = {"type": "text", "text": ""}
        elif block.kind == "thinking":
            start = {"type": "thinking", "thinking": "", "signature": ""}
        else:
            start = {"type": "tool_use", "id": next(ids), "name": block.name, "input": {}}
        yield (
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": start},
            False,
        )
        deltas: list[dict[str, Any]]
        if block.kind == "text":
            deltas = [{"type": "text_delta", "text": c} for c in block.chunks]
        elif block.kind == "thinking":
            deltas = [{"type": "thinking_delta", "thinking": c} for c in block.chunks]
            deltas.append({"type": "signature_delta", "signature": THINKING_SIGNATURE})
        else:
            deltas = [
                {"type": "input_json_delta", "partial_json": f}
                for f in _json_fragments(block.input)
            ]
        for delta in deltas:
            yield (
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
                True,
            )
        yield "content_block_stop", {"type": "content_block_stop", "index": index}, False
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": reply.stop_reason, "stop_sequence": None},
            "usage": _usage(_delta_count(reply)),
        },
        False,
    )
    yield "message_stop", {"type": "message_stop"}, False


# --- HTTP server -------------------------------------------------------------------------------
def _tool_names(body: dict[str, Any]) -> set[str]:
    tools = body.get("tools")
    return {
        t["name"]
        for t in (tools if isinstance(tools, list) else [])
        if isinstance(t, dict) and isinstance(t.get("name"), str)
    }


class _Handler(ScriptedHandler["ScriptedAnthropic"]):
    server_version = "ScriptedAnthropic/1.0"
    request_id_header = "request-id"

    def _error(self, status: int, error_type: str, message: str) -> None:
        self._send_json(
            status,
            {"type": "error", "error": {"type": error_type, "message": message}},
            {"x-should-retry": "false"},
        )

    def do_HEAD(self) -> None:
        self._record(None)
        self._send_json(200, {})

    def do_GET(self) -> None:
        route = self._record(None)
        if route == "/v1/models":
            self._send_json(
                200,
                {
                    "data": [_model_info(DEFAULT_MODEL)],
                    "has_more": False,
                    "first_id": DEFAULT_MODEL,
                    "last_id": DEFAULT_MODEL,
                },
            )
        elif route.startswith("/v1/models/"):
            self._send_json(200, _model_info(route.rsplit("/", 1)[1]))
        elif route == "/api/hello":
            self._send_json(200, {})
        else:
            self._error(404, "not_found_error", f"no route for GET {route}")

    def do_POST(self) -> None:
        body, route = self._read_json()
        if route == "/v1/messages/count_tokens":
            self._send_json(200, {"input_tokens": INPUT_TOKENS})
        elif route == "/v1/messages":
            if not isinstance(body, dict):
                self._error(400, "invalid_request_error", "body must be a JSON object")
                return
            self.server.owner._note_model_request(body)
            self._messages(body)
        else:
            self._error(404, "not_found_error", f"no route for POST {route}")

    def _messages(self, body: dict[str, Any]) -> None:
        owner = self.server.owner
        reply = owner._plan(body)
        violation = unoffered_call(
            (b.name for b in reply.blocks if b.kind == "tool_use"), _tool_names(body)
        )
        if violation is not None:
            owner._note_violation(violation)
            self._error(400, "invalid_request_error", f"{VIOLATION}: {violation}")
            return
        if reply.error_status is not None:
            self._error(reply.error_status, reply.error_type, reply.error_message)
            return
        model = str(body.get("model") or DEFAULT_MODEL)
        message_id = owner._ids.next("msg_scripted_")
        tool_ids = [
            owner._ids.next("toolu_scripted_") for b in reply.blocks if b.kind == "tool_use"
        ]
        if body.get("stream"):
            self._stream(_sse_events(reply, message_id, model, tool_ids), reply.delta_delay_s)
            return
        self._send_json(
            200,
            {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": _final_content(reply, tool_ids),
                "stop_reason": reply.stop_reason,
                "stop_sequence": None,
                "usage": _usage(_delta_count(reply)),
            },
        )


def _model_info(model_id: str) -> dict[str, Any]:
    return {
        "type": "model",
        "id": model_id,
        "display_name": model_id,
        "created_at": "2025-01-01T00:00:00Z",
    }


class ScriptedAnthropic(ScriptedServer[Reply]):
    """Context manager running the scripted Messages API (see the module docstring).

    ``responder`` (optional) is asked first for every ``POST /v1/messages`` body; a ``Reply``
    it returns overrides the keyword rules, ``None`` falls back to them.
    """

    _handler = _Handler
    _thread_name = "scripted-anthropic"
    _url_path = ""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        responder: Callable[[dict[str, Any]], Reply | None] | None = None,
    ) -> None:
        super().__init__(host, port, responder=responder, planner=plan_reply)
