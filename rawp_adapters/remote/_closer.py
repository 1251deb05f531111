"""Closing frames written by another party: for a session whose worker died (its lease
expired) or that a worker could not start. They continue the session's ``seq`` and end
what it left open, so its stream still keeps every DPS rule and ends in ``session.closed``.
Runs in nats-py's loop."""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from typing import Final

from nats.js import JetStreamContext
from nats.js.errors import KeyWrongLastSequenceError, NotFoundError
from nats.js.kv import KeyValue

from rawp_adapters._codec import utc_timestamp
from rawp_adapters.frames import (
    AgentError,
    AgentErrorFrame,
    ClientFrame,
    InteractionResolved,
    InteractionResolvedFrame,
    SessionClosed,
    SessionClosedFrame,
    ToolInvokeResult,
    ToolInvokeResultFrame,
    TurnEnd,
    TurnEndFrame,
)
from rawp_adapters.remote._batches import batches, frame_lines
from rawp_adapters.remote._names import WORKER_LOST, Names
from rawp_adapters.remote._ops import SessionTaken, append
from rawp_adapters.remote._resume import replay

LOST: Final = "the worker running this session stopped renewing its lease"
_LEASE_GONE: Final = ("KV-Operation", "Nats-Marker-Reason")
"""Headers of a lease's last message when the key is deleted, purged or expired."""
CLOSING_MAX_BYTES: Final = 64 * 1024
"""Bytes of closing frames per message (far below any server's ``max_payload``)."""
CLOSING_GIVE_UP: Final = 10.0
"""Seconds the closing frames are tried for before the closer gives up."""


@dataclass(slots=True)
class StreamState:
    """What a session's stream left open, read from its frames as plain JSON (frame
    types it does not know pass by)."""

    last_seq: int = 0
    stream_seq: int = 0
    """The stream sequence of the session's last message (``0``: none)."""
    closed: bool = False
    turn_id: str | None = None
    interactions: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)

    def feed_message(self, data: bytes, stream_seq: int) -> None:
        """One message of frames (``specs/remote.md``, "Batches")."""
        self.stream_seq = stream_seq
        for line in frame_lines(data):
            with contextlib.suppress(ValueError, TypeError, KeyError, AttributeError):
                self.feed(line)  # a line that is no frame (anyone's garbage) changes nothing

    def feed(self, data: bytes) -> None:
        frame = json.loads(data)
        self.last_seq = max(self.last_seq, int(frame.get("seq", 0)))
        payload = frame.get("payload") or {}
        match frame.get("type"):
            case "session.turn.start":
                self.turn_id = payload.get("turn_id")
            case "session.turn.end":
                self.turn_id = None
                self.tools.clear()
            case "agent.interaction.request":
                self.interactions.append(payload["interaction_id"])
            case "agent.interaction.resolved":
                with contextlib.suppress(ValueError):
                    self.interactions.remove(payload["interaction_id"])
            case "tool.invoke.request":
                self.tools.append(payload["invocation_id"])
            case "tool.invoke.result":
                with contextlib.suppress(ValueError):
                    self.tools.remove(payload["invocation_id"])
            case "session.closed":
                self.closed = True


async def read_state(js: JetStreamContext, names: Names, session_id: str) -> StreamState:
    """Replay the session's frames from the first."""
    state = StreamState()
    subject = names.frames_subject(session_id)
    async for message in replay(js, names.frames_stream, subject, None):
        state.feed_message(message.data, message.metadata.sequence.stream)
    return state


def closing_frames(
    session_id: str, state: StreamState, *, code: str, message: str
) -> list[ClientFrame]:
    """``agent.error`` fatal, then what the session left open ended (its questions
    resolved ``cancelled``, its tool calls failed, its turn ended ``error``), then
    ``session.closed`` ``error``, numbered on from the last ``seq``."""
    turn = state.turn_id
    frames: list[ClientFrame] = []

    def add(kind: type[ClientFrame], payload: object) -> None:
        seq = state.last_seq + len(frames) + 1
        frames.append(kind(session_id=session_id, seq=seq, timestamp=timestamp, payload=payload))

    timestamp = utc_timestamp()
    add(AgentErrorFrame, AgentError(severity="fatal", error_code=code, message=message))
    for interaction_id in state.interactions:
        resolved = InteractionResolved(
            interaction_id=interaction_id, outcome="cancelled", decided_by="session_end"
        )
        add(InteractionResolvedFrame, resolved)
    if turn is not None:
        for invocation_id in state.tools:
            result = ToolInvokeResult(
                invocation_id=invocation_id,
                output_type="text",
                output=message,
                is_error=True,
                turn_id=turn,
            )
            add(ToolInvokeResultFrame, result)
        add(TurnEndFrame, TurnEnd(turn_id=turn, stop_reason="error"))
    add(SessionClosedFrame, SessionClosed(reason="error"))
    return frames


async def publish_frames(
    js: JetStreamContext, names: Names, frames: list[ClientFrame], *, after: int
) -> None:
    """Append ``frames`` to their session's stream on condition that its last message is
    stream sequence ``after``; raises :class:`SessionTaken` otherwise."""
    session_id = frames[0].session_id
    subject = names.frames_subject(session_id)
    for batch in batches(frames, CLOSING_MAX_BYTES):
        after = await append(js, subject, session_id, batch, after, CLOSING_GIVE_UP)


async def close_orphan(
    js: JetStreamContext,
    kv: KeyValue,
    names: Names,
    session_id: str,
    expired: int,
    *,
    closer: str,
    code: str,
    message: str,
) -> bool:
    """Claim the session's expired lease (only one party can: the claim names the
    revision of the expiry marker) and write its closing frames unless it has them.
    Returns whether this call wrote them."""
    try:
        await kv.update(session_id, json.dumps({"closer": closer}).encode(), last=expired)
    except KeyWrongLastSequenceError:
        return False  # a live lease, or another party closing it
    try:
        while True:  # its worker, cut off, may still append until the closing frames land
            state = await read_state(js, names, session_id)
            if state.closed:
                return False
            frames = closing_frames(session_id, state, code=code, message=message)
            with contextlib.suppress(SessionTaken):
                await publish_frames(js, names, frames, after=state.stream_seq)
                break
        with contextlib.suppress(Exception):
            await js.delete_consumer(names.control_stream, names.control_consumer(session_id))
        with contextlib.suppress(Exception):
            await js.purge_stream(names.control_stream, subject=names.control_subject(session_id))
        return True
    finally:
        await kv.delete(session_id)


async def close_if_orphaned(
    js: JetStreamContext, kv: KeyValue, names: Names, session_id: str, *, closer: str
) -> bool:
    """What a Master does when it attaches: a session that has frames but neither
    ``session.closed`` nor a lease lost its worker while nobody watched; close it.
    Returns whether this call wrote the closing frames."""
    try:
        bucket = names.lease_bucket
        lease = await js.get_msg(f"KV_{bucket}", subject=f"$KV.{bucket}.{session_id}")
        revision = lease.seq or 0
        if not any(header in (lease.headers or {}) for header in _LEASE_GONE):
            return False  # its worker holds it
    except NotFoundError:
        revision = 0
    try:
        last = await js.get_last_msg(names.frames_stream, names.frames_subject(session_id))
    except NotFoundError:
        return False  # not started yet: its request waits in the queue
    state = StreamState()
    state.feed_message(last.data or b"", last.seq or 0)
    if state.closed:
        return False
    return await close_orphan(
        js, kv, names, session_id, revision, closer=closer, code=WORKER_LOST, message=LOST
    )
