"""The app-server's JSON-RPC over the agent's pipes: one JSON object per line, no
``"jsonrpc"`` member. :meth:`Connection.request` waits for its answer; what the
app-server sends of its own (notifications, requests) reaches :attr:`Connection.incoming`
in the order it arrived, as :class:`Notification`, :class:`ServerRequest`,
:class:`LineTooLong` or :class:`Unreadable`. The stream ends when stdout does; requests
still waiting then fail with ``ConnectionError``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from structlog.stdlib import BoundLogger

from rawp_adapters import LineFramer, OversizedLine
from rawp_adapters.processes import AgentProcess


@dataclass(frozen=True, slots=True)
class Notification:
    method: str
    params: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ServerRequest:
    id: int | str
    method: str
    params: dict[str, Any]


@dataclass(frozen=True, slots=True)
class LineTooLong:
    size: int


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A line that is not a JSON object (its start)."""

    line: str


Incoming = Notification | ServerRequest | LineTooLong | Unreadable

_QUOTED = 200
"""Bytes of an unreadable line quoted in its warning."""
_BUFFERED = 1024
"""Messages read ahead of the session's handling of them; then the reader waits."""


class CodexRequestError(Exception):
    """The app-server answered a request with an error."""

    def __init__(self, method: str, error: Any) -> None:
        message = error.get("message") if isinstance(error, dict) else None
        super().__init__(f"{method}: {message or error}")
        self.error = error


@dataclass
class _Pending:
    method: str
    done: anyio.Event = field(default_factory=anyio.Event)
    message: dict[str, Any] | None = None


class Connection:
    """Requests to, and messages from, one app-server process."""

    def __init__(self, process: AgentProcess, log: BoundLogger, max_line_bytes: int) -> None:
        self._process = process
        self._log = log
        self._framer = LineFramer(max_line_bytes)
        self._next_id = 0
        self._pending: dict[int, _Pending] = {}
        self._closed = False
        self._send: MemoryObjectSendStream[Incoming]
        self.incoming: MemoryObjectReceiveStream[Incoming]
        self._send, self.incoming = anyio.create_memory_object_stream[Incoming](
            max_buffer_size=_BUFFERED
        )

    async def read(self) -> None:
        """Read stdout to its end (run it in the background for the session)."""
        try:
            async with self._send:
                while True:
                    try:
                        chunk = await self._process.stdout.receive()
                    except (
                        anyio.EndOfStream,
                        anyio.BrokenResourceError,
                        anyio.ClosedResourceError,
                    ):
                        return
                    for line in self._framer.feed(chunk):
                        await self._dispatch(line)
        finally:
            self._closed = True
            for pending in self._pending.values():
                pending.done.set()

    async def _dispatch(self, line: bytes | OversizedLine) -> None:
        if isinstance(line, OversizedLine):
            await self._send.send(LineTooLong(line.size))
            return
        try:
            message = json.loads(line)
        except ValueError:
            message = None
        if not isinstance(message, dict):
            await self._send.send(Unreadable(line[:_QUOTED].decode("utf-8", "replace")))
            return
        method, params = message.get("method"), message.get("params")
        params = params if isinstance(params, dict) else {}
        if isinstance(method, str):
            if "id" in message:
                await self._send.send(ServerRequest(message["id"], method, params))
            else:
                await self._send.send(Notification(method, params))
            return
        answered = message.get("id")
        pending = self._pending.get(answered) if isinstance(answered, int) else None
        if pending is None:
            self._log.warning("an answer to no request", id=message.get("id"))
            return
        pending.message = message
        pending.done.set()

    async def request(self, method: str, params: dict[str, Any], timeout: float) -> Any:
        """Send a request; its ``result``. Raises :class:`CodexRequestError` for an
        error answer, ``TimeoutError``, or ``ConnectionError`` once the app-server is gone."""
        if self._closed:
            raise ConnectionError("the app-server is gone")
        self._next_id += 1
        request_id = self._next_id
        pending = _Pending(method)
        self._pending[request_id] = pending
        try:
            await self._write({"id": request_id, "method": method, "params": params})
            with anyio.fail_after(timeout):
                await pending.done.wait()
        finally:
            del self._pending[request_id]
        if pending.message is None:
            raise ConnectionError(f"the app-server went away before it answered {method}")
        if "error" in pending.message:
            raise CodexRequestError(method, pending.message["error"])
        return pending.message.get("result")

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"method": method}
        if params is not None:
            message["params"] = params
        await self._write(message)

    async def respond(self, request_id: int | str, result: dict[str, Any]) -> None:
        await self._write({"id": request_id, "result": result})

    async def refuse(self, request_id: int | str, message: str) -> None:
        await self._write({"id": request_id, "error": {"code": -32601, "message": message}})

    async def _write(self, message: dict[str, Any]) -> None:
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()
        await self._process.write(data + b"\n")
