"""``rawp-adapters serve --listen PATH``: a resident bridge, one session per connection.

A Master that would start ``serve --stdio`` once per session pays a fresh interpreter
each time; this server pays it once. Each connection to the Unix socket at ``PATH``
(mode 0600: only its owner can connect) opens with one line naming the session
(:class:`OpenLine`), then carries the same JSON lines as ``serve --stdio``: control
frames in, DPS frames out; the end of what the Master sends ends the session. A bad
open line is answered with one ``{"error": …}`` line and the connection is closed.
SIGTERM, SIGHUP and SIGINT close every open session (each stream ends with its
``session.closed``), remove the socket and exit with 128+N.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import SocketListener, SocketStream, TaskGroup
from anyio.streams.buffered import BufferedByteReceiveStream
from pydantic import BaseModel, ConfigDict, ValidationError

from rawp_adapters._adapter import Adapter
from rawp_adapters._errors import RawpError
from rawp_adapters._logging import get_logger
from rawp_adapters._session import Session, SessionOptions, open_session
from rawp_adapters.cli._serve import STOP_SIGNALS
from rawp_adapters.host import serve_stream

_log = get_logger("rawp_adapters.cli.listen")


class OpenLine(BaseModel):
    """The first line of a connection: which session to open (every field optional,
    ``{}`` opens one with the server's settings in its workspace)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    session_id: str | None = None
    """The session's id (a fresh UUID when omitted)."""
    workspace: str | None = None
    """An existing directory inside the server's ``--workspace``, relative to it (that
    directory itself when omitted)."""
    settings: dict[str, Any] = {}
    """Adapter settings, laid over the server's own (``--setting``, ``--settings-json``)."""


AdapterFactory = Callable[[dict[str, Any]], Adapter]
"""The server's adapter with these settings laid over its own."""


async def serve_listening(
    make_adapter: AdapterFactory,
    *,
    path: Path,
    root: Path,
    max_line_bytes: int,
    options: SessionOptions,
    announce: Callable[[str], None],
) -> int:
    """Serve sessions on the Unix socket ``path`` until a stop signal; returns 128+N."""
    listener = await _listen(path)
    connections = _Connections(make_adapter, root, max_line_bytes, options)
    try:
        async with listener:
            with anyio.open_signal_receiver(*STOP_SIGNALS) as signals:
                async with anyio.create_task_group() as handlers:
                    async with anyio.create_task_group() as accepting:
                        accepting.start_soon(listener.serve, connections.serve, handlers)
                        announce(json.dumps({"listening": str(path)}))
                        signum = await _first(signals)
                        accepting.cancel_scope.cancel()
                    name = signal.Signals(signum).name
                    _log.info("signal received; closing every session", signal=name)
                    connections.stop(handlers)
    finally:
        await anyio.Path(path).unlink(missing_ok=True)
    return 128 + signum


def take_socket_path(path: Path) -> str | None:
    """Make ``path`` free for a new socket: a socket left by a server that was killed is
    removed. Says why not when something else is there or a server still answers."""
    if not path.exists():
        return None
    if not path.is_socket():
        return f"--listen {path}: the path exists and is not a socket"
    with socket.socket(socket.AF_UNIX) as probe:
        try:
            probe.connect(str(path))
        except ConnectionRefusedError:
            path.unlink()
            return None
    return f"--listen {path}: another server is listening there"


async def _listen(path: Path) -> SocketListener:
    """A listener on ``path`` that only its owner can connect to, from the start."""
    umask = os.umask(0o177)
    try:
        return await anyio.create_unix_listener(path)
    finally:
        os.umask(umask)


async def _first(signals: AsyncIterator[int]) -> int:
    async for signum in signals:
        return signum
    raise AssertionError("the signal receiver ended")  # pragma: no cover


class _Connections:
    """Each connection's session; :meth:`stop` closes them all (each connection then
    ends once its ``session.closed`` is written)."""

    def __init__(
        self, make_adapter: AdapterFactory, root: Path, max_line_bytes: int, options: SessionOptions
    ) -> None:
        self._make_adapter = make_adapter
        self._root = root
        self._max_line_bytes = max_line_bytes
        self._options = options
        self._sessions: set[Session] = set()
        self._opening: set[anyio.CancelScope] = set()
        self._stopping = False

    def stop(self, tg: TaskGroup) -> None:
        self._stopping = True
        for scope in self._opening:
            scope.cancel()
        for session in self._sessions:
            tg.start_soon(session.close)

    async def serve(self, stream: SocketStream) -> None:
        async with stream:
            receive = BufferedByteReceiveStream(stream)
            with anyio.CancelScope() as opening:
                self._opening.add(opening)
                try:
                    opened = await self._open_line(receive, stream)
                finally:
                    self._opening.discard(opening)
            if opened is None:
                return
            adapter, workspace, session_id = opened
            async with open_session(
                adapter, workspace=workspace, session_id=session_id, options=self._options
            ) as session:
                self._sessions.add(session)
                if self._stopping:  # the signal came while the agent started
                    await session.close()
                try:
                    await serve_stream(
                        session, receive, stream, max_line_bytes=self._max_line_bytes
                    )
                finally:
                    self._sessions.discard(session)

    async def _open_line(
        self, receive: BufferedByteReceiveStream, stream: SocketStream
    ) -> tuple[Adapter, Path, str | None] | None:
        """The adapter, workspace and session id the open line asks for, or ``None``
        when the Master left or was told why not."""
        try:
            line = await receive.receive_until(b"\n", self._max_line_bytes)
            opened = OpenLine.model_validate_json(line)
            return (
                self._make_adapter(opened.settings),
                self._workspace(opened.workspace),
                opened.session_id,
            )
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError):
            return None
        except (anyio.DelimiterNotFound, ValidationError, RawpError, ValueError) as exc:
            await _refuse(stream, exc)
            return None

    def _workspace(self, name: str | None) -> Path:
        path = (self._root / (name or ".")).resolve()
        if not path.is_relative_to(self._root):
            raise ValueError(f"workspace {name!r} is outside the server's --workspace")
        if not path.is_dir():
            raise ValueError(f"workspace {name!r} is not a directory")
        return path


async def _refuse(stream: SocketStream, exc: Exception) -> None:
    if isinstance(exc, anyio.DelimiterNotFound):
        reason = "the open line is longer than --max-line-bytes"
    elif isinstance(exc, ValidationError):
        problems = (f"{'.'.join(map(str, e['loc'])) or 'line'}: {e['msg']}" for e in exc.errors())
        reason = f"a bad open line ({'; '.join(problems)})"
    else:
        reason = str(exc)
    _log.warning("connection refused", reason=reason)
    error = json.dumps({"error": reason}, default=str) + "\n"
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
        await stream.send(error.encode())
