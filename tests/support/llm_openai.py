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
       API_ERROR_MESSAGE, "type": ..., "code": ...}}``). 400 fails fast; omp retries 5xx for
       about 30 s, so avoid 5xx in fast tests.
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

import contextlib
import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal, Self
from urllib.parse import urlsplit

__all__ = [
    "API_ERROR_MESSAGE",
    "COMPACTION_MARKER",
    "DEFAULT_MODEL",
    "DEFAULT_TEXT",
    "HTTP_400",
    "MAX_TOKENS",
    "MAX_TOKENS_TEXT",
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
    "WRITE_FILE",
    "WRITE_FILE_DEFAULT_CONTENT",
    "Part",
    "RecordedRequest",
    "Reply",
    "ScriptedOpenAI",
    "ToolCall",
    "last_user_text",
    "plan_reply",
    "trailing_tool_results",
]

# --- keywords (in the last user message) -------------------------------------------------------
THINK_FIRST = "THINK_FIRST"
RUN_BASH = "RUN_BASH"
READ_FILE = "READ_FILE"
WRITE_FILE = "WRITE_FILE"
PARALLEL_TOOLS = "PARALLEL_TOOLS"
SLOW_STREAM = "SLOW_STREAM"
MAX_TOKENS = "MAX_TOKENS"
HTTP_400 = "HTTP_400"
COMPACTION_MARKER = "<conversation>"

# --- canned content ----------------------------------------------------------------------------
DEFAULT_TEXT = "Hello from the scripted model."
THINKING_TEXT = "Let me think about this step by step."
TOOL_PREAMBLE = "I'll use a tool."
TOOL_SAID = "Tool said: "
SUMMARY_TEXT = (
    "## Goal\nAnswer the user's scripted prompts.\n\n"
    "## Progress\n- The scripted model replied to every prompt.\n\n"
    "## Next Steps\n- Wait for the next prompt."
)
MAX_TOKENS_TEXT = "This answer is cut off because it ran out of"
WRITE_FILE_DEFAULT_CONTENT = "Written by the scripted model.\n"
PARALLEL_COMMANDS = ("echo one > one.txt", "echo two > two.txt")
API_ERROR_MESSAGE = "Scripted error"
SLOW_STREAM_DELTAS = 200
SLOW_STREAM_DELAY_S = 0.05
PROMPT_TOKENS = 100
TOOL_RESULT_QUOTE_CHARS = 200
DEFAULT_MODEL = "fake-model"

ReasoningField = Literal["reasoning_content", "reasoning", "reasoning_text"]

_HTTP_STATUS_RE = re.compile(r"\bHTTP_([1-5]\d\d)\b")
_RUN_BASH_RE = re.compile(re.escape(RUN_BASH) + r"[ \t]+([^\n]+)")
_READ_FILE_RE = re.compile(re.escape(READ_FILE) + r"[ \t]+([^\n]+)")
_WRITE_FILE_RE = re.compile(re.escape(WRITE_FILE) + r"[ \t]+(\S+)(?:[ \t]([^\n]*))?")
_SLOW_RE = re.compile(re.escape(SLOW_STREAM) + r"(?:[ \t]+(\d+))?(?:[ \t]+(\d+))?")
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
    ``error_status`` set: answer that HTTP status with a JSON error instead.
    """

    parts: tuple[Part, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: Literal["stop", "tool_calls", "length"] = "stop"
    delta_delay_s: float = 0.0
    error_status: int | None = None
    error_message: str = API_ERROR_MESSAGE


@dataclass(frozen=True)
class RecordedRequest:
    """One HTTP request as received (body parsed as JSON when possible, else ``None``)."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


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


def _split(text: str, parts: int) -> tuple[str, ...]:
    """``text`` cut into about ``parts`` non-empty pieces (at least one)."""
    if not text:
        return ("",)
    size = max(1, -(-len(text) // parts))
    return tuple(text[i : i + size] for i in range(0, len(text), size))


def _text(text: str, parts: int = 4) -> Part:
    return Part(kind="text", chunks=_split(text, parts))


def _tool_reply(*calls: ToolCall) -> Reply:
    return Reply(parts=(_text(TOOL_PREAMBLE, 2),), tool_calls=calls, finish_reason="tool_calls")


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

    reply: Reply
    if match := _RUN_BASH_RE.search(prompt):
        reply = _tool_reply(ToolCall("bash", {"command": match.group(1).strip()}))
    elif match := _READ_FILE_RE.search(prompt):
        reply = _tool_reply(ToolCall("read", {"path": match.group(1).strip()}))
    elif match := _WRITE_FILE_RE.search(prompt):
        content = match.group(2) or WRITE_FILE_DEFAULT_CONTENT
        reply = _tool_reply(ToolCall("write", {"path": match.group(1), "content": content}))
    elif PARALLEL_TOOLS in prompt:
        reply = _tool_reply(*(ToolCall("bash", {"command": c}) for c in PARALLEL_COMMANDS))
    elif match := _SLOW_RE.search(prompt):
        count = int(match.group(1) or SLOW_STREAM_DELTAS)
        delay = int(match.group(2)) / 1000 if match.group(2) else SLOW_STREAM_DELAY_S
        chunks = tuple(f"tick {i} " for i in range(count))
        reply = Reply(parts=(Part(kind="text", chunks=chunks),), delta_delay_s=delay)
    elif MAX_TOKENS in prompt:
        reply = Reply(parts=(_text(MAX_TOKENS_TEXT),), finish_reason="length")
    else:
        reply = Reply(parts=(_text(DEFAULT_TEXT, 5),))
    if THINK_FIRST in prompt:
        thinking = Part(kind="reasoning", chunks=_split(THINKING_TEXT, 3))
        reply = Reply(
            parts=(thinking, *reply.parts),
            tool_calls=reply.tool_calls,
            finish_reason=reply.finish_reason,
            delta_delay_s=reply.delta_delay_s,
        )
    return reply


# --- chunk generation --------------------------------------------------------------------------
def _json_fragments(arguments: dict[str, Any]) -> tuple[str, ...]:
    return _split(json.dumps(arguments), 4)


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


class _Ids:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._n = 0

    def next(self, prefix: str) -> str:
        with self._lock:
            self._n += 1
            return f"{prefix}{self._n:06d}"


def _stream_chunks(
    reply: Reply, reasoning_field: str, tool_ids: list[str]
) -> Iterator[tuple[dict[str, Any] | None, list[dict[str, Any]], bool]]:
    """(delta or None for the usage chunk, finish/usage extras, is_content_delta) per chunk."""
    yield {"role": "assistant", "content": ""}, [], False
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
class _ClientGone(Exception):
    """The client closed the connection (or the server is shutting down)."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    owner: ScriptedOpenAI


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    server_version = "ScriptedOpenAI/1.0"
    timeout = 60  # idle keep-alive connections never pin a handler thread forever

    # -- plumbing -------------------------------------------------------------------------------
    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output quiet."""

    def setup(self) -> None:
        super().setup()
        self.server.owner._track(self.connection, add=True)

    def finish(self) -> None:
        try:
            with contextlib.suppress(OSError):
                super().finish()
        finally:
            self.server.owner._track(self.connection, add=False)

    def handle_one_request(self) -> None:
        try:
            super().handle_one_request()
        except (_ClientGone, ConnectionError, TimeoutError, OSError, ValueError):
            self.close_connection = True

    def _read_body(self) -> bytes:
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            data = bytearray()
            while True:
                size_line = self.rfile.readline()
                size = int(size_line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return bytes(data)
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    def _write(self, data: bytes) -> None:
        if self.server.owner._closing.is_set():
            raise _ClientGone
        try:
            self.wfile.write(data)
            self.wfile.flush()
        except OSError as exc:
            raise _ClientGone from exc

    def _send_json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("x-request-id", self.server.owner._ids.next("req_scripted_"))
        self.end_headers()
        if self.command != "HEAD":
            self._write(data)

    def _error(self, status: int, message: str, code: str | None = None) -> None:
        error_type = _ERROR_TYPES.get(status, "server_error" if status >= 500 else "api_error")
        self._send_json(
            status,
            {"error": {"message": message, "type": error_type, "param": None, "code": code}},
        )

    def _record(self, body: Any) -> str:
        self.server.owner._record(
            RecordedRequest(
                method=self.command,
                path=self.path,
                headers={k.lower(): v for k, v in self.headers.items()},
                body=body,
            )
        )
        return urlsplit(self.path).path.rstrip("/")

    # -- verbs ----------------------------------------------------------------------------------
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
        raw = self._read_body()
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        route = self._record(body)
        if route != "/v1/chat/completions":
            self._error(404, f"no route for POST {route}", "not_found")
            return
        if not isinstance(body, dict):
            self._error(400, "body must be a JSON object", "invalid_json")
            return
        self.server.owner._completions_record(body)
        self._completions(body)

    def _completions(self, body: dict[str, Any]) -> None:
        owner = self.server.owner
        reply = owner._plan(body)
        if reply.error_status is not None:
            self._error(reply.error_status, reply.error_message, f"scripted_{reply.error_status}")
            return
        model = str(body.get("model") or owner.model)
        completion_id = owner._ids.next("chatcmpl-scripted-")
        tool_ids = [owner._ids.next("call_scripted_") for _ in reply.tool_calls]
        created = int(time.time())
        if not body.get("stream"):
            self._send_json(
                200,
                {
                    "id": completion_id,
                    "object": "chat.completion",
                    "created": created,
                    "model": model,
                    "choices": [
                        {
                            "index": 0,
                            "message": _final_message(reply, owner.reasoning_field, tool_ids),
                            "finish_reason": reply.finish_reason,
                        }
                    ],
                    "usage": _usage(reply),
                },
            )
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("x-request-id", owner._ids.next("req_scripted_"))
        self.end_headers()
        try:
            for delta, extras, is_delta in _stream_chunks(reply, owner.reasoning_field, tool_ids):
                chunk: dict[str, Any] = {
                    "id": completion_id,
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model,
                    "choices": [],
                }
                if delta is not None:
                    choice: dict[str, Any] = {"index": 0, "delta": delta, "finish_reason": None}
                    for extra in extras:
                        choice.update(extra)
                    chunk["choices"] = [choice]
                else:
                    for extra in extras:
                        chunk.update(extra)
                self._write_event(json.dumps(chunk))
                if (
                    is_delta
                    and reply.delta_delay_s > 0
                    and owner._closing.wait(reply.delta_delay_s)
                ):
                    raise _ClientGone
            self._write_event("[DONE]")
            self._write(b"0\r\n\r\n")
        except _ClientGone:
            owner._note_aborted_stream()
            self.close_connection = True

    def _write_event(self, data: str) -> None:
        payload = f"data: {data}\n\n".encode()
        self._write(b"%x\r\n%s\r\n" % (len(payload), payload))


def _model_info(model_id: str) -> dict[str, Any]:
    return {"id": model_id, "object": "model", "created": 1735689600, "owned_by": "scripted"}


class ScriptedOpenAI:
    """Context manager running the scripted Chat Completions API (see the module docstring).

    ``responder`` (optional) is asked first for every ``POST /v1/chat/completions`` body; a
    ``Reply`` it returns overrides the keyword rules, ``None`` falls back to them.
    ``reasoning_field`` names the delta field that carries reasoning text.
    """

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
        self._address = (host, port)
        self.model = model
        self.reasoning_field: ReasoningField = reasoning_field
        self._responder = responder
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Condition()
        self._log: list[RecordedRequest] = []
        self._requests: list[dict[str, Any]] = []
        self._connections: set[socket.socket] = set()
        self._aborted_streams = 0
        self._closing = threading.Event()
        self._ids = _Ids()

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> Self:
        if self._server is not None:
            return self
        self._closing.clear()
        server = _Server(self._address, _Handler)
        server.owner = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="scripted-openai",
            daemon=True,
        )
        self._thread.start()
        return self

    def close(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        self._closing.set()
        server.shutdown()
        server.server_close()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- public state ---------------------------------------------------------------------------
    @property
    def port(self) -> int:
        """The bound TCP port (only while running)."""
        if self._server is None:
            raise RuntimeError("ScriptedOpenAI is not running")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1`` (only while running)."""
        if self._server is None:
            raise RuntimeError("ScriptedOpenAI is not running")
        host = self._server.server_address[0]
        return f"http://{host!s}:{self.port}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Bodies of all ``POST /v1/chat/completions`` requests so far (a snapshot copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def log(self) -> list[RecordedRequest]:
        """Every HTTP request so far (method, raw path incl. query, headers, parsed body)."""
        with self._lock:
            return list(self._log)

    @property
    def aborted_streams(self) -> int:
        """How many streamed replies stopped early because the client went away."""
        with self._lock:
            return self._aborted_streams

    def wait_for_requests(self, count: int, timeout: float = 10.0) -> bool:
        """Block until at least ``count`` completion requests arrived; False on timeout."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while len(self._requests) < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._lock.wait(remaining)
            return True

    # -- internals used by the handler ----------------------------------------------------------
    def _plan(self, body: dict[str, Any]) -> Reply:
        if self._responder is not None:
            reply = self._responder(body)
            if reply is not None:
                return reply
        return plan_reply(body)

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._log.append(request)

    def _completions_record(self, body: dict[str, Any]) -> None:
        with self._lock:
            self._requests.append(body)
            self._lock.notify_all()

    def _note_aborted_stream(self) -> None:
        with self._lock:
            self._aborted_streams += 1

    def _track(self, conn: socket.socket, *, add: bool) -> None:
        with self._lock:
            if add:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)
