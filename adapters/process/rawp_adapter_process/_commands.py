"""Commands to the agent and their answers, matched by id with bounded waits.

The xcsh family answers some commands without an id: unknown commands name
themselves in ``command``, and xcsh reports a handler's exception as
``command: "parse"`` (the id is lost). Those answer the oldest open command of that
name, or (``parse``) the oldest open command. A ``prompt`` may be answered twice
(omp: success, then failure when the prompt could not run); the later answers go to
the prompt's ``on_late`` callback.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from rawp_adapter_process._wire import Response, encode_command

Write = Callable[[bytes], Awaitable[None]]
LateAnswer = Callable[[Response], None]


class AgentGone(Exception):
    """The agent went away (or the session is closing) before it answered."""


class _Pending:
    __slots__ = ("command", "done", "on_late", "response")

    def __init__(self, command: str, on_late: LateAnswer | None) -> None:
        self.command = command
        self.on_late = on_late
        self.done = anyio.Event()
        self.response: Response | None = None


class CommandChannel:
    def __init__(self, write: Write) -> None:
        self._write = write
        self._ids = itertools.count(1)
        self._pending: dict[str, _Pending] = {}
        self._gone: str | None = None

    def new_id(self) -> str:
        return f"rawp-{next(self._ids)}"

    async def request(
        self,
        command: dict[str, Any],
        *,
        timeout: float,
        command_id: str | None = None,
        on_late: LateAnswer | None = None,
    ) -> Response:
        """Send ``command`` and return its first answer.

        Raises ``TimeoutError`` after ``timeout`` seconds and :class:`AgentGone` when the
        agent went away. With ``on_late``, answers after the first go there until
        :meth:`forget` is called with ``command_id``.
        """
        if self._gone is not None:
            raise AgentGone(self._gone)
        if command_id is None:
            command_id = self.new_id()
        pending = _Pending(str(command["type"]), on_late)
        self._pending[command_id] = pending
        try:
            await self._write(encode_command({"id": command_id, **command}))
            with anyio.fail_after(timeout):
                await pending.done.wait()
        except BaseException:
            self._pending.pop(command_id, None)
            raise
        if on_late is None:
            self._pending.pop(command_id, None)
        if pending.response is None:
            raise AgentGone(self._gone or "the agent went away")
        return pending.response

    async def send(self, command: dict[str, Any]) -> None:
        """Send ``command`` without waiting for its answer (which is then ignored)."""
        await self._write(encode_command(command))

    def forget(self, command_id: str) -> None:
        """Stop routing late answers of ``command_id``."""
        self._pending.pop(command_id, None)

    def on_response(self, response: Response) -> bool:
        """Route one answer; False when it answers nothing open."""
        if response.id is not None:
            pending = self._pending.get(response.id)
            if pending is None:
                return False
            if pending.done.is_set():
                if pending.on_late is not None:
                    pending.on_late(response)
                return True
            self._resolve(pending, response)
            return True
        pending = self._oldest_open(response.command)
        if pending is None:
            return False
        self._resolve(pending, response)
        return True

    def fail_all(self, reason: str) -> None:
        """The agent is gone: every waiting command raises :class:`AgentGone`."""
        self._gone = reason
        for pending in self._pending.values():
            pending.done.set()
        self._pending.clear()

    def _oldest_open(self, command: str | None) -> _Pending | None:
        for pending in self._pending.values():
            if pending.done.is_set():
                continue
            if command == "parse" or command == pending.command:
                return pending
        return None

    @staticmethod
    def _resolve(pending: _Pending, response: Response) -> None:
        pending.response = response
        pending.done.set()
