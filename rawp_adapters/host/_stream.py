"""Serving one session over a byte stream pair: control lines in, frame lines out."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Final

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

from rawp_adapters._codec import encode_frames
from rawp_adapters._errors import SessionClosedError
from rawp_adapters._framing import DEFAULT_MAX_LINE_BYTES, LineFramer
from rawp_adapters._logging import get_logger
from rawp_adapters._session import Session

_STREAM_FAILED: Final = (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)

_log = get_logger("rawp_adapters.host")


async def serve_stream(
    session: Session,
    receive: ByteReceiveStream,
    send: ByteSendStream,
    *,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> bool:
    """Serve ``session`` until its ``session.closed`` is out: control frames are read
    from ``receive`` (one JSON line each, at most ``max_line_bytes``; bad ones are
    answered with ``session.error``), frames are written to ``send``, each line whole;
    frames that queue up while a write runs go out together in the next one.

    The end of ``receive`` (or a failure to read it) ends the session; so does a
    failure to write to ``send``, after which the rest of the frames are dropped.
    Returns whether every frame was written. The streams stay open: they are the
    caller's.
    """
    async with anyio.create_task_group() as tg:
        tg.start_soon(_read_control, session, receive, max_line_bytes)
        written = await _write_frames(
            session, send, on_broken=partial(tg.start_soon, session.close)
        )
        tg.cancel_scope.cancel()
    return written


async def _read_control(session: Session, receive: ByteReceiveStream, max_line_bytes: int) -> None:
    framer = LineFramer(max_line_bytes)
    try:
        async for chunk in receive:
            for line in framer.feed(chunk):
                await session.send_line(line)
        for line in framer.close():
            await session.send_line(line)
    except SessionClosedError:
        return  # the session ended first (control.session.end, or the agent exited)
    except _STREAM_FAILED as exc:
        _log.error("reading control frames failed; ending the session", error=_reason(exc))
    await session.close()


async def _write_frames(
    session: Session, send: ByteSendStream, *, on_broken: Callable[[], object]
) -> bool:
    """Write every frame until the session's stream ends: what is queued at once is
    encoded and written in one go (a frame never waits for others to come). If ``send``
    breaks, calls ``on_broken`` once, drains the rest unwritten and returns False."""
    broken = False
    while True:
        try:
            frames = await session.receive_all()
        except anyio.EndOfStream:
            return not broken
        if broken:
            continue
        try:
            await send.send(encode_frames(frames))
        except _STREAM_FAILED as exc:
            _log.error("writing frames failed; ending the session", error=_reason(exc))
            broken = True
            on_broken()


def _reason(exc: BaseException) -> str:
    """What went wrong, also when an anyio error wraps the OS error."""
    cause = exc.__cause__ or exc
    return str(cause) or type(cause).__name__
