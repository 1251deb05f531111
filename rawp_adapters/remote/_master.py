"""The Master's side: open sessions on a pool of workers, read their frames, send them
control frames, and attach to a session again after a restart."""

from __future__ import annotations

import contextlib
import sys
import uuid
from collections.abc import AsyncIterator
from functools import partial
from typing import Self

import anyio
from nats.js.kv import KeyValue

from rawp_adapters._adapter import AgentMetadata
from rawp_adapters._codec import encode_frame
from rawp_adapters._control import ControlFrames
from rawp_adapters._errors import SessionClosedError
from rawp_adapters._frames import ClientFrame, ControlFrame, SessionClosedFrame, UnknownFrame
from rawp_adapters._logging import get_logger
from rawp_adapters._queue import FrameQueue
from rawp_adapters._session import SessionOptions
from rawp_adapters._telemetry import trace_headers
from rawp_adapters.remote._closer import close_if_orphaned
from rawp_adapters.remote._follow import Follower
from rawp_adapters.remote._leases import LeaseWatch
from rawp_adapters.remote._link import (
    CONNECT_TIMEOUT,
    Credentials,
    Link,
    open_link,
    publish_stored,
    redact,
)
from rawp_adapters.remote._names import DEFAULT_PREFIX, MSG_ID, Names, check_session_id
from rawp_adapters.remote._reading import read_frames
from rawp_adapters.remote._requests import StartRequest, options_dict
from rawp_adapters.remote._store import DEFAULT_LEASE_TTL, ensure_streams

_log = get_logger("rawp_adapters.remote.master")


class RemoteSession:
    """A session that runs on a worker, used like a local :class:`rawp_adapters.Session`:
    ``async for frame in session`` (replayed from after ``from_seq``, ``session.closed``
    last), :meth:`send` control frames built with :attr:`control`, :meth:`close` to end
    it. :meth:`detach` stops reading and leaves it running for a later
    :meth:`RemoteSessions.attach`."""

    def __init__(self, remote: RemoteSessions, session_id: str, from_seq: int) -> None:
        self.session_id = session_id
        self.control = ControlFrames(session_id)
        """Builds control frames for this session."""
        self.last_seq = from_seq
        """The ``seq`` of the last frame received (frames up to it are not delivered)."""
        self._remote = remote
        self._link = remote._link
        self._control_subject = remote.names.control_subject(session_id)
        self._log = _log.bind(session_id=session_id)
        # Unbounded: the server keeps the frames, and nothing waits for room here.
        self._queue = FrameQueue[ClientFrame](sys.maxsize)
        self._closed = anyio.Event()
        self._following = False

    @property
    def closed(self) -> bool:
        """Whether ``session.closed`` has arrived."""
        return self._closed.is_set()

    async def _subscribe(self) -> None:
        self._following = True
        await self._link.call(
            self._remote._follower.follow, self.session_id, self.last_seq, self._on_data
        )

    def _on_data(self, data: bytes) -> None:
        self._link.to_host(lambda: self._deliver(data))

    def _deliver(self, data: bytes) -> None:
        """One message of frames (``specs/remote.md``, "Batches")."""
        if self.closed:
            return
        frames, errors = read_frames(data)
        for error in errors:
            self._log.error("undecodable frame skipped", error=str(error))
        fresh: list[ClientFrame] = []
        last_seq = self.last_seq
        for frame in frames:
            if type(frame) is UnknownFrame or frame.seq <= last_seq:
                continue
            if frame.type.startswith("control."):
                continue
            last_seq = frame.seq
            fresh.append(frame)  # type: ignore[arg-type]
            if type(frame) is SessionClosedFrame:
                self._closed.set()
                break
        self.last_seq = last_seq
        with contextlib.suppress(anyio.ClosedResourceError):
            self._queue.put_many(fresh)
        if self.closed:
            self._queue.close()

    def __aiter__(self) -> AsyncIterator[ClientFrame]:
        return self._queue.__aiter__()

    async def receive(self) -> ClientFrame:
        """The next frame; raises ``anyio.EndOfStream`` after ``session.closed`` (or
        :meth:`detach`)."""
        return await self._queue.get()

    async def receive_all(self) -> list[ClientFrame]:
        """Every frame that has arrived, at least one (waits for it); raises
        ``anyio.EndOfStream`` after ``session.closed`` (or :meth:`detach`)."""
        return await self._queue.get_all()

    async def wait_closed(self) -> None:
        await self._closed.wait()

    async def send(self, frame: ControlFrame | UnknownFrame) -> None:
        """Publish one control frame to the session (kept by the server until its worker
        takes it). Raises :class:`rawp_adapters.SessionClosedError` once
        ``session.closed`` has arrived."""
        await self.send_line(encode_frame(frame))

    async def send_line(self, line: bytes | str) -> None:
        """Publish one control frame as a JSON line, as it is (the worker answers bad
        input with ``session.error``)."""
        if self.closed:
            raise SessionClosedError(f"session {self.session_id} has closed")
        data = line.encode() if isinstance(line, str) else line
        headers = {MSG_ID: uuid.uuid4().hex, **trace_headers()}
        publish = partial(publish_stored, self._link.js, self._control_subject)
        await self._link.call(publish, data.rstrip(b"\n"), headers)

    async def close(self) -> None:
        """End the session (``control.session.end``) and wait for ``session.closed``."""
        with contextlib.suppress(SessionClosedError):
            await self.send(self.control.end())
        await self.wait_closed()

    async def detach(self) -> None:
        """Stop receiving; the session goes on on its worker."""
        following, self._following = self._following, False
        self._remote._sessions.pop(self.session_id, None)
        self._queue.close()
        if following:
            with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                await self._link.call(self._unfollow)

    async def _unfollow(self) -> None:
        self._remote._follower.unfollow(self.session_id)


class RemoteSessions:
    """Sessions on the workers behind one NATS server. Use :meth:`connect`."""

    def __init__(self, link: Link, names: Names, kv: KeyValue, master_id: str) -> None:
        self._link = link
        self.names = names
        self.master_id = master_id
        self._sessions: dict[str, RemoteSession] = {}
        self._kv = kv
        self._follower = Follower(link.js, names)
        self._watch = LeaseWatch(
            link, kv, names, closer=master_id, accept=lambda sid: sid in self._sessions
        )

    @classmethod
    async def connect(
        cls,
        url: str,
        *,
        prefix: str = DEFAULT_PREFIX,
        credentials: Credentials | None = None,
        lease_ttl: float = DEFAULT_LEASE_TTL,
        replicas: int = 1,
        connect_timeout: float = CONNECT_TIMEOUT,
    ) -> RemoteSessions:
        """Connect to ``url`` (one server, or a cluster's separated by commas: the loss
        of the one connected to is ridden out on another), and create the streams and
        the lease bucket if no one has yet (``lease_ttl`` and ``replicas``, the servers
        of a cluster that keep each, are used only then). Raises ``ConnectionError``
        when no connection is made within ``connect_timeout`` seconds (with the server's
        reason, e.g. an authorization violation)."""
        names = Names(prefix)
        master_id = f"master-{uuid.uuid4().hex[:8]}"
        _log.info("connecting", url=redact(url), prefix=prefix)
        link = await open_link(url, credentials, name=master_id, connect_timeout=connect_timeout)
        try:
            kv = await link.call(ensure_streams, link.js, names, lease_ttl, replicas)
            remote = cls(link, names, kv, master_id)
            await link.call(remote._follower.start)
            await remote._watch.__aenter__()
        except BaseException:
            await link.aclose()
            raise
        return remote

    async def open(
        self,
        metadata: AgentMetadata,
        *,
        workspace: str | None = None,
        session_id: str | None = None,
        options: SessionOptions | None = None,
    ) -> RemoteSession:
        """Queue a new session; the first free worker starts it. Its frames can be read
        at once (``session.capabilities`` comes when it has started)."""
        sid = check_session_id(session_id or str(uuid.uuid4()))
        request = StartRequest(
            session_id=sid,
            metadata=metadata,
            workspace=workspace,
            options=options_dict(options),
        )
        session = await self.attach(sid)
        headers = {MSG_ID: f"start:{sid}", **trace_headers()}
        publish = partial(publish_stored, self._link.js, self.names.start_subject)
        await self._link.call(publish, request.model_dump_json().encode(), headers)
        return session

    async def attach(self, session_id: str, *, from_seq: int = 0) -> RemoteSession:
        """Read a session's frames from after ``from_seq`` (the ``seq`` of the last frame
        this Master had), e.g. after a restart. Several Masters may attach to one
        session: each gets every frame, with the same ``seq``. A session whose worker
        died while no one watched gets its closing frames now."""
        session = RemoteSession(self, check_session_id(session_id), from_seq)
        self._sessions[session_id] = session
        await session._subscribe()
        link = self._link
        orphaned = partial(close_if_orphaned, link.js, self._kv, self.names, session_id)
        if await link.call(partial(orphaned, closer=self.master_id)):
            _log.warning("closing frames written for an orphaned session", session_id=session_id)
        return session

    async def aclose(self) -> None:
        """Detach from every session (they go on) and disconnect."""
        with anyio.CancelScope(shield=True):
            for session in list(self._sessions.values()):
                await session.detach()
            with contextlib.suppress(Exception):
                await self._watch.__aexit__(None, None, None)
            with contextlib.suppress(Exception):
                await self._link.call(self._follower.stop)
            await self._link.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
