"""What the scripted LLM servers (``llm_openai``, ``llm_anthropic``) have in common.

:class:`ScriptedServer` runs a stdlib ``ThreadingHTTPServer`` in a daemon thread, records every
request, tracks open connections so that :meth:`ScriptedServer.close` can cut them, and counts
streams a client walked away from. :class:`ScriptedHandler` carries the HTTP plumbing (request
bodies, JSON replies, chunked server-sent events). The keywords and canned texts both servers
understand live here too. The protocol modules add their routes, reply planning and event
encoding.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
import time
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, ClassVar, Generic, Self, TypeVar
from urllib.parse import urlsplit

# --- keywords both servers understand (in the last user message) -----------------------------
THINK_FIRST = "THINK_FIRST"
RUN_BASH = "RUN_BASH"
WRITE_FILE = "WRITE_FILE"
PARALLEL_TOOLS = "PARALLEL_TOOLS"
SLOW_STREAM = "SLOW_STREAM"
MAX_TOKENS = "MAX_TOKENS"

# --- canned content ----------------------------------------------------------------------------
DEFAULT_TEXT = "Hello from the scripted model."
THINKING_TEXT = "Let me think about this step by step."
TOOL_PREAMBLE = "I'll use a tool."
TOOL_SAID = "Tool said: "
MAX_TOKENS_TEXT = "This answer is cut off because it ran out of"
PARALLEL_COMMANDS = ("echo one > one.txt", "echo two > two.txt")
SLOW_STREAM_DELAY_S = 0.05
TOOL_RESULT_QUOTE_CHARS = 200

RUN_BASH_RE = re.compile(re.escape(RUN_BASH) + r"[ \t]+([^\n]+)")
WRITE_FILE_RE = re.compile(re.escape(WRITE_FILE) + r"[ \t]+(\S+)(?:[ \t]([^\n]*))?")
_SLOW_STREAM_RE = re.compile(re.escape(SLOW_STREAM) + r"(?:[ \t]+(\d+))?(?:[ \t]+(\d+))?")

_REQUEST_ID_PREFIX = "req_scripted_"

VIOLATION = "scripted model violation"

ReplyT = TypeVar("ReplyT")
OwnerT = TypeVar("OwnerT", bound="ScriptedServer[Any]")
Responder = Callable[[dict[str, Any]], ReplyT | None]


def split_text(text: str, parts: int) -> tuple[str, ...]:
    """``text`` cut into about ``parts`` non-empty pieces (at least one)."""
    if not text:
        return ("",)
    size = max(1, -(-len(text) // parts))
    return tuple(text[i : i + size] for i in range(0, len(text), size))


def slow_stream(prompt: str, default_count: int) -> tuple[tuple[str, ...], float] | None:
    """The deltas and the delay between them for ``SLOW_STREAM [count] [delay_ms]`` in ``prompt``.

    ``None`` when the keyword is absent.
    """
    match = _SLOW_STREAM_RE.search(prompt)
    if match is None:
        return None
    count = int(match.group(1) or default_count)
    delay = int(match.group(2)) / 1000 if match.group(2) else SLOW_STREAM_DELAY_S
    return tuple(f"tick {i} " for i in range(count)), delay


def unoffered_call(called: Iterable[str], offered: Collection[str]) -> str | None:
    """Which of the ``called`` tools the request does not offer (a model cannot call it), or
    ``None`` when it offers them all."""
    for name in called:
        if name not in offered:
            return (
                f"the script calls the tool {name!r}, which the request does not offer "
                f"(offered: {', '.join(sorted(offered)) or 'none'})"
            )
    return None


def sse_event(data: str, event: str | None = None) -> str:
    """One server-sent event: an optional ``event:`` line, a ``data:`` line, a blank line."""
    name = f"event: {event}\n" if event is not None else ""
    return f"{name}data: {data}\n\n"


@dataclass(frozen=True)
class RecordedRequest:
    """One HTTP request as received (body parsed as JSON when possible, else ``None``)."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


class Ids:
    """Numbered ids (``<prefix>000001``, ...), one counter shared by every prefix."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._n = 0

    def next(self, prefix: str) -> str:
        with self._lock:
            self._n += 1
            return f"{prefix}{self._n:06d}"


class ClientGone(Exception):
    """The client closed the connection (or the server is shutting down)."""


class _HTTPServer(ThreadingHTTPServer, Generic[OwnerT]):
    daemon_threads = True
    allow_reuse_address = True
    owner: OwnerT


class ScriptedHandler(BaseHTTPRequestHandler, Generic[OwnerT]):
    """HTTP/1.1 plumbing; subclasses add the ``do_<VERB>`` methods of their protocol."""

    server: _HTTPServer[OwnerT]
    protocol_version = "HTTP/1.1"
    request_id_header: ClassVar[str]

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
        except (ClientGone, ConnectionError, TimeoutError, OSError, ValueError):
            self.close_connection = True

    def _read_json(self) -> tuple[Any, str]:
        """The request body parsed as JSON (``None`` when it is not) and the route; records both."""
        raw = self._read_body()
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        return body, self._record(body)

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

    def _record(self, body: Any) -> str:
        """Log the request with ``body``; returns its route (path without query or final ``/``)."""
        self.server.owner._log_request(
            RecordedRequest(
                method=self.command,
                path=self.path,
                headers={k.lower(): v for k, v in self.headers.items()},
                body=body,
            )
        )
        return urlsplit(self.path).path.rstrip("/")

    def _write(self, data: bytes) -> None:
        if self.server.owner._closing.is_set():
            raise ClientGone
        try:
            self.wfile.write(data)
            self.wfile.flush()
        except OSError as exc:
            raise ClientGone from exc

    def _send_json(self, status: int, payload: Any, extra: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header(self.request_id_header, self.server.owner._ids.next(_REQUEST_ID_PREFIX))
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD":
            self._write(data)

    def _stream(
        self, events: Iterable[tuple[str, bool]], delta_delay_s: float, *, cut: bool = False
    ) -> None:
        """Send ``(server-sent event, is_content_delta)`` pairs with chunked encoding.

        Content deltas are ``delta_delay_s`` apart. A client that goes away, or the server
        closing, ends the stream early; it is counted in ``aborted_streams``. With ``cut``
        the connection is dropped after the events, without the stream's last chunk (a
        provider failing mid-stream).
        """
        owner = self.server.owner
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.send_header(self.request_id_header, owner._ids.next(_REQUEST_ID_PREFIX))
        self.end_headers()
        try:
            for event, is_delta in events:
                payload = event.encode()
                self._write(b"%x\r\n%s\r\n" % (len(payload), payload))
                if is_delta and delta_delay_s > 0 and owner._closing.wait(delta_delay_s):
                    raise ClientGone
            if cut:
                self.close_connection = True
                with contextlib.suppress(OSError):
                    self.connection.shutdown(socket.SHUT_RDWR)
                return
            self._write(b"0\r\n\r\n")
        except ClientGone:
            owner._note_aborted_stream()
            self.close_connection = True


class ScriptedServer(Generic[ReplyT]):
    """Runs ``_handler`` on ``host:port`` in a daemon thread, as a context manager.

    Subclasses set ``_handler``, ``_thread_name`` and ``_url_path`` (the API prefix of
    ``base_url``). Model requests (the bodies the handler passes to ``_note_model_request``)
    are answered with the reply the ``responder`` returns, or the ``planner``'s when it
    returns ``None``.
    """

    _handler: ClassVar[type[ScriptedHandler[Any]]]
    _thread_name: ClassVar[str]
    _url_path: ClassVar[str]

    def __init__(
        self,
        host: str,
        port: int,
        *,
        responder: Responder[ReplyT] | None,
        planner: Callable[[dict[str, Any]], ReplyT],
    ) -> None:
        self._address = (host, port)
        self._responder = responder
        self._planner = planner
        self._server: _HTTPServer[Self] | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Condition()
        self._log: list[RecordedRequest] = []
        self._requests: list[dict[str, Any]] = []
        self._connections: set[socket.socket] = set()
        self._aborted_streams = 0
        self._violations: list[str] = []
        self._closing = threading.Event()
        self._ids = Ids()

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> Self:
        if self._server is not None:
            return self
        self._closing.clear()
        server: _HTTPServer[Self] = _HTTPServer(self._address, self._handler)
        server.owner = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=self._thread_name,
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
        return int(self._running().server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` and the API's path prefix, if any (only while running)."""
        host = self._running().server_address[0]
        return f"http://{host!s}:{self.port}{self._url_path}"

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Bodies of all model requests so far, in arrival order (a snapshot copy)."""
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
        """Block until at least ``count`` model requests arrived; False on timeout."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while len(self._requests) < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._lock.wait(remaining)
            return True

    # -- internals used by the handler ----------------------------------------------------------
    def _running(self) -> _HTTPServer[Self]:
        if self._server is None:
            raise RuntimeError(f"{type(self).__name__} is not running")
        return self._server

    def _plan(self, body: dict[str, Any]) -> ReplyT:
        if self._responder is not None:
            reply = self._responder(body)
            if reply is not None:
                return reply
        return self._planner(body)

    def _log_request(self, request: RecordedRequest) -> None:
        with self._lock:
            self._log.append(request)

    def _note_model_request(self, body: dict[str, Any]) -> None:
        with self._lock:
            self._requests.append(body)
            self._lock.notify_all()

    @property
    def violations(self) -> list[str]:
        """Tool calls the script asked for that the request did not offer (answered 400)."""
        with self._lock:
            return list(self._violations)

    def _note_violation(self, violation: str) -> None:
        with self._lock:
            self._violations.append(violation)

    def _note_aborted_stream(self) -> None:
        with self._lock:
            self._aborted_streams += 1

    def _track(self, conn: socket.socket, *, add: bool) -> None:
        with self._lock:
            if add:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)
