"""Just enough HTTP/1.1 for MCP's streamable HTTP transport, sans I/O but for reading a
request off a buffered stream: a ``POST`` carries one JSON-RPC message and is answered
with one JSON body (or 202), a ``GET`` opens the server's event stream (its messages as
server-sent events). For the host tools of an agent that takes no stdio MCP server from
its client (the Copilot CLI)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import anyio
from anyio.streams.buffered import BufferedByteReceiveStream

_MAX_HEAD_LINE = 16 * 1024
_MAX_BODY = 16 * 1024 * 1024


@dataclass(frozen=True)
class Request:
    method: str
    headers: dict[str, str]
    """Names lowercased."""
    body: bytes


def is_request_line(line: bytes) -> bool:
    return line.split(b" ", 1)[0] in (b"POST", b"GET", b"DELETE")


async def read_request(reader: BufferedByteReceiveStream, line: bytes | None) -> Request | None:
    """The next request of the connection (its request ``line`` already read, if given);
    None when the connection ends or the request is malformed."""
    try:
        if line is None:
            line = await reader.receive_until(b"\r\n", _MAX_HEAD_LINE)
        headers: dict[str, str] = {}
        while header := await reader.receive_until(b"\r\n", _MAX_HEAD_LINE):
            name, _, value = header.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length") or 0)
        if not 0 <= length <= _MAX_BODY:
            return None
        body = await reader.receive_exactly(length) if length else b""
    except (
        anyio.EndOfStream,
        anyio.IncompleteRead,
        anyio.DelimiterNotFound,
        anyio.BrokenResourceError,
        anyio.ClosedResourceError,
        ValueError,
    ):
        return None
    return Request(line.split(b" ", 1)[0].decode("latin-1"), headers, body)


def response(status: str, body: Any = None, headers: dict[str, str] | None = None) -> bytes:
    """A complete response; ``body`` (a JSON-RPC message) as ``application/json``."""
    data = b"" if body is None else json.dumps(body, ensure_ascii=False).encode()
    fields = {"Content-Length": str(len(data)), **(headers or {})}
    if body is not None:
        fields["Content-Type"] = "application/json"
    head = "".join(f"{name}: {value}\r\n" for name, value in fields.items())
    return f"HTTP/1.1 {status}\r\n{head}\r\n".encode("latin-1") + data


EVENT_STREAM = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\r\n"
)
"""The head of the server's event stream (open until either side closes it)."""


def event(message: dict[str, Any]) -> bytes:
    """One server message on the event stream."""
    return b"event: message\ndata: " + json.dumps(message, ensure_ascii=False).encode() + b"\n\n"
