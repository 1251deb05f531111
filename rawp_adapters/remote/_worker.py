"""The worker: takes session-start requests from the work queue while it has room, runs
each session with the ordinary runtime, publishes its frames (several to a message,
each on condition that the one before it is the session's last), feeds it the control
frames of its durable consumer, renews its lease, and closes what other workers left
behind."""

from __future__ import annotations

import os
import socket
import uuid
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Final

import anyio
from nats.aio.msg import Msg
from nats.js.errors import KeyWrongLastSequenceError
from pydantic import ValidationError

from rawp_adapters._errors import RawpError, SessionClosedError
from rawp_adapters._logging import get_logger
from rawp_adapters._registry import create_adapter
from rawp_adapters._session import Session, open_session
from rawp_adapters._telemetry import attach, context_from, trace_headers
from rawp_adapters.processes import HostEnvironment, host_environment
from rawp_adapters.remote import _ops
from rawp_adapters.remote._batches import HEADROOM
from rawp_adapters.remote._closer import StreamState, closing_frames, publish_frames
from rawp_adapters.remote._leases import LeaseWatch
from rawp_adapters.remote._link import RETRY_WAIT, Credentials, Link, open_link, redact
from rawp_adapters.remote._names import START_REFUSED, Names
from rawp_adapters.remote._requests import StartRequest
from rawp_adapters.remote._store import DEFAULT_LEASE_TTL, ensure_streams, lease_ttl

"""Seconds between tries of a server call that failed (the server restarting)."""
REQUEUE_DELAY: Final = 1.0
"""Seconds before a request refused for an adapter limit is offered again."""
CREDENTIAL_PREFIX: Final = "NATS_"
"""Variables of the worker's environment no agent gets, whatever its settings."""


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    url: str
    max_sessions: int = 16
    adapter_limits: Mapping[str, int] = field(default_factory=dict)
    """At most this many sessions per ``adapter_type`` at once."""
    workspace_root: Path | None = None
    prefix: str = Names().prefix
    credentials: Credentials = field(default_factory=Credentials)
    lease_ttl: float = DEFAULT_LEASE_TTL
    """Used when this worker creates the lease bucket (the first one does)."""
    replicas: int = 1
    """Servers of a cluster that keep each stream and the lease bucket, when this worker
    creates them (3 on a 3-node cluster: any one node may then be lost)."""
    allow_import_paths: bool = False
    """Whether a request's settings may name code to import (``module:attr``)."""
    drain_grace: float = 0.0
    """Once draining, how long a running turn may take to end by itself before its
    session is closed (an idle session is closed at once)."""
    worker_id: str = field(
        default_factory=lambda: f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    )


class Worker:
    def __init__(self, settings: WorkerSettings) -> None:
        self.settings = settings
        self.names = Names(settings.prefix)
        self.sessions: dict[str, Session] = {}
        self._running: Counter[str] = Counter()
        self._draining = False
        self._closing: set[str] = set()
        self._log = get_logger("rawp_adapters.remote.worker").bind(worker=settings.worker_id)
        self.agents_environment = HostEnvironment(
            default_policy="allowlist",
            withheld_prefixes=(CREDENTIAL_PREFIX,),
            withheld_values=settings.credentials.secrets(settings.url),
        )
        """What its agents get of its environment (``specs/remote.md``)."""

    def drain(self) -> None:
        """Take no new sessions and close the running ones (each gets its closing
        frames): an idle one at once, one in a turn when the turn has ended or
        ``drain_grace`` has passed. :meth:`run` returns once they are all closed."""
        if self._draining:
            return
        self._draining = True
        self._log.info("draining", sessions=len(self.sessions))
        self._taking.cancel()
        for session in list(self.sessions.values()):
            self._close_if_idle(session)
        self._tg.start_soon(self._close_after_grace)

    def _close_if_idle(self, session: Session) -> None:
        if self.settings.drain_grace > 0 and session.turn_id is not None:
            return
        self._close(session)

    def _close(self, session: Session) -> None:
        """Close ``session`` (its closing frames published as ever), once."""
        if session.session_id in self._closing:
            return
        self._closing.add(session.session_id)
        self._tg.start_soon(session.close)

    async def _close_after_grace(self) -> None:
        with anyio.move_on_after(self.settings.drain_grace):
            while self.sessions:
                await self._changed.wait()
        for session in list(self.sessions.values()):
            self._close(session)

    async def run(self, *, on_ready: anyio.Event | None = None) -> None:
        settings = self.settings
        self._log.info("connecting", url=redact(settings.url), prefix=self.names.prefix)
        self._slots = anyio.Semaphore(settings.max_sessions)
        self._changed = anyio.Event()  # set (and renewed) whenever a session ends
        self._taking = anyio.CancelScope()
        link = await open_link(settings.url, settings.credentials, name=settings.worker_id)
        try:
            self.kv = await link.call(
                ensure_streams, link.js, self.names, settings.lease_ttl, settings.replicas
            )
            self.ttl = await link.call(lease_ttl, self.kv)
            requests = await link.call(_ops.start_subscription, link.js, self.names)
            async with (
                LeaseWatch(link, self.kv, self.names, closer=settings.worker_id, sweep=True),
                anyio.create_task_group() as tg,
            ):
                self._tg = tg
                self._log.info("ready", max_sessions=settings.max_sessions, lease_ttl=self.ttl)
                if on_ready is not None:
                    on_ready.set()
                await self._take_requests(link, requests)
            self._log.info("drained")
        finally:
            await link.aclose()

    async def _take_requests(self, link: Link, requests: _ops.PullSubscription) -> None:
        while not self._draining:
            await self._slots.acquire()
            message: Msg | None = None
            with self._taking:
                message = await link.call(_ops.take_one, requests)
            if message is None:
                self._slots.release()
                continue
            try:
                request = StartRequest.model_validate_json(message.data)
            except ValidationError as exc:
                self._log.error("invalid start request dropped", error=str(exc))
                await link.call(_ops.settle, message, "term")
                self._slots.release()
                continue
            adapter_type = request.metadata.adapter_type
            limit = self.settings.adapter_limits.get(adapter_type)
            if limit is not None and self._running[adapter_type] >= limit:
                await link.call(_ops.settle, message, "nak", REQUEUE_DELAY)
                self._slots.release()
                continue
            self._running[adapter_type] += 1
            self._tg.start_soon(self._serve, link, request, message)
        self._taking = anyio.CancelScope()

    async def _serve(self, link: Link, request: StartRequest, message: Msg) -> None:
        sid = request.session_id
        try:
            lease = await link.call(_ops.claim_lease, self.kv, sid, self.settings.worker_id)
            await link.call(_ops.settle, message, "ack")
            if lease is None:
                self._log.warning("session already taken; request dropped", session_id=sid)
                return
            try:
                # The Master's trace, if its request carried one, is the session's parent.
                with (
                    host_environment(self.agents_environment),
                    attach(context_from(message.headers)),
                ):
                    published = await self._run_session(link, request, lease)
            except Exception:
                self._log.exception("session failed", session_id=sid)
                published = False
            if published:
                await link.call(_ops.release, link.js, self.kv, self.names, sid, lease.revision)
            else:  # its lease expires and whoever sees that writes the closing frames
                self._log.error("session ended without its frames out", session_id=sid)
        finally:
            self._running[request.metadata.adapter_type] -= 1
            self._slots.release()

    async def _run_session(self, link: Link, request: StartRequest, lease: _ops.Lease) -> bool:
        """Run the session; whether every frame of it, ``session.closed`` last, is out."""
        sid = request.session_id
        try:
            metadata = request.metadata.model_copy(
                update={"allow_import_paths": self.settings.allow_import_paths}
            )
            adapter = create_adapter(metadata)
            workspace = await self._workspace(request)
            options = request.session_options()
        except (RawpError, ValueError, TypeError, OSError) as exc:
            self._log.warning("session refused", session_id=sid, error=str(exc))
            frames = closing_frames(sid, StreamState(), code=START_REFUSED, message=str(exc))
            await link.call(partial(publish_frames, after=0), link.js, self.names, frames)
            return True
        control = await link.call(_ops.ControlFeed.open, link.js, self.names, sid)
        self._log.info("session starting", session_id=sid, adapter_type=metadata.adapter_type)
        published = False
        # The lease is renewed from now, not once the agent is up: an agent slower to
        # start than the lease's TTL (a real one on a loaded host) would lose it.
        async with anyio.create_task_group() as leased:
            leased.start_soon(self._renew, link, sid, lease, leased.cancel_scope)
            async with open_session(
                adapter, workspace=workspace, session_id=sid, options=options
            ) as session:
                self.sessions[sid] = session
                try:
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(self._feed_control, link, session, control)
                        if self._draining:
                            self._close_if_idle(session)
                        await self._publish(link, session)
                        published = True
                        tg.cancel_scope.cancel()
                finally:
                    del self.sessions[sid]
                    self._closing.discard(sid)
                    self._changed.set()
                    self._changed = anyio.Event()
            leased.cancel_scope.cancel()
        self._log.info("session ended", session_id=sid, published=published)
        return published

    async def _workspace(self, request: StartRequest) -> Path:
        root = self.settings.workspace_root
        if root is None:
            if request.workspace is None:
                raise ValueError("this worker has no --workspace-root: name a workspace")
            path = Path(request.workspace)
            if not path.is_absolute() or not await anyio.Path(path).is_dir():
                raise ValueError(f"workspace must be an existing absolute directory: {path}")
            return path
        path = (root / (request.workspace or request.session_id)).resolve()
        if not path.is_relative_to(root.resolve()):
            raise ValueError(f"workspace {request.workspace!r} is outside the worker's root")
        await anyio.Path(path).mkdir(parents=True, exist_ok=True)
        return path

    async def _publish(self, link: Link, session: Session) -> None:
        assert link.nc is not None
        max_bytes = link.nc.max_payload - HEADROOM
        # The trace the session runs in (the Master's, from its start request) goes with
        # its frames, so a Master can tie what it receives to it.
        publisher = _ops.Publisher(
            link.js, self.names, session.session_id, max_bytes, trace_headers()
        )
        while True:
            try:
                frames = await session.receive_all()
            except anyio.EndOfStream:
                return
            await link.call(publisher.publish, frames, self.ttl)
            if self._draining:  # a turn that ended lets its session close
                self._close_if_idle(session)

    async def _feed_control(self, link: Link, session: Session, control: _ops.ControlFeed) -> None:
        while True:
            messages = await link.call(control.take)
            try:
                for message in messages:
                    with attach(context_from(message.headers)):
                        await session.send_line(message.data)
            except SessionClosedError:
                return
            finally:
                await link.call(_ops.ack_all, messages)

    async def _renew(
        self, link: Link, sid: str, lease: _ops.Lease, scope: anyio.CancelScope
    ) -> None:
        """Renew the lease every third of its TTL; a renewal that failed (its server
        lost, the bucket electing a leader) is tried again after ``RETRY_WAIT``, not a
        third of the TTL later, so that the lease outlives the time a lost server costs."""
        wait = self.ttl / 3
        while True:
            await anyio.sleep(wait)
            try:
                await link.call(lease.renew)
            except KeyWrongLastSequenceError:
                session = self.sessions.get(sid)
                if session is not None and await link.call(_ops.lease_deleted, self.kv, sid):
                    # deleted under a live session, not claimed: no closer writes its
                    # closing frames (the server's marker of a delete is let be)
                    self._log.error("lease deleted; the session is closed", session_id=sid)
                    self._close(session)
                    return
                self._log.error("lease lost; the session is abandoned", session_id=sid)
                scope.cancel()
                return
            except Exception as exc:
                self._log.warning("lease renewal failed", session_id=sid, error=str(exc))
                wait = RETRY_WAIT
            else:
                wait = self.ttl / 3
