"""A Master's one reading of every session it follows: a single ordered consumer on all
sessions' frames (from the stream's end when it starts), whose messages go to the
session they are for; a session attached after that first gets its stored messages
(from the one holding the frame after the ``seq`` it had), the live ones that come
meanwhile held back until then. Runs in nats-py's loop."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field

from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js import JetStreamContext
from nats.js.api import ConsumerConfig, DeliverPolicy
from nats.js.errors import NotFoundError

from rawp_adapters.remote._names import Names
from rawp_adapters.remote._resume import replay, start_after

Deliver = Callable[[bytes], None]
"""Takes a message's data, in stream order; must not block."""


@dataclass(slots=True)
class _Followed:
    deliver: Deliver
    held: list[bytes] | None = field(default_factory=list)
    """Live messages that came while the stored ones were read (None once they are)."""


class Follower:
    def __init__(self, js: JetStreamContext, names: Names) -> None:
        self._js = js
        self._names = names
        self._prefix = names.frames_subject("")
        self._followed: dict[str, _Followed] = {}
        self._sub: Subscription | None = None

    async def start(self) -> None:
        stream = self._names.frames_stream
        info = await self._js.stream_info(stream)
        start = (info.state.last_seq or 0) + 1
        sub = self._sub = await self._js.subscribe(
            self._names.frames_subject("*"),
            stream=stream,
            cb=self._on_message,
            ordered_consumer=True,
            config=ConsumerConfig(
                deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=start
            ),
            idle_heartbeat=1.0,
        )
        # An ordered consumer that resets before its first message starts again from
        # where it believes it got to: the stream's end here, not its first message.
        jsi = sub._sub._jsi
        if jsi is not None:
            jsi._sseq = start - 1

    async def follow(self, session_id: str, from_seq: int, deliver: Deliver) -> None:
        """Deliver the session's messages, from the one holding the frame after
        ``from_seq`` (frames up to it may come again: the reader skips them)."""
        followed = self._followed[session_id] = _Followed(deliver)
        try:
            stream, subject = self._names.frames_stream, self._names.frames_subject(session_id)
            with contextlib.suppress(NotFoundError):  # none stored: nothing to read
                last = await self._js.get_last_msg(stream, subject)
                start = await start_after(self._js, stream, subject, from_seq, last)
                if start is None or start <= (last.seq or 0):
                    async for message in replay(self._js, stream, subject, start):
                        deliver(message.data)
        finally:
            for data in followed.held or ():
                deliver(data)
            followed.held = None

    def unfollow(self, session_id: str) -> None:
        self._followed.pop(session_id, None)

    async def stop(self) -> None:
        self._followed.clear()
        sub, self._sub = self._sub, None
        if sub is not None:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()

    async def _on_message(self, msg: Msg) -> None:
        followed = self._followed.get(msg.subject.removeprefix(self._prefix))
        if followed is None:
            return
        if followed.held is not None:
            followed.held.append(msg.data)
        else:
            followed.deliver(msg.data)
