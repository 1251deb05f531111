"""``rawp-adapters serve --stdio``: any adapter as a subprocess speaking JSON lines.

Control frames come in on stdin, DPS frames go out on stdout, one per line. Bad
input is answered with ``session.error`` INVALID_FRAME by the session runtime.
End of stdin ends the session; the process exits once ``session.closed`` is out.
SIGTERM, SIGHUP and SIGINT end it the same way, and the exit code is then 128+N.
"""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator, Callable
from functools import partial
from pathlib import Path
from typing import Final

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from rawp_adapters._adapter import Adapter
from rawp_adapters._codec import encode_frame
from rawp_adapters._errors import SessionClosedError
from rawp_adapters._framing import LineFramer
from rawp_adapters._logging import get_logger
from rawp_adapters._session import Session, open_session
from rawp_adapters.cli._threads import DaemonWorker, daemon_worker

READ_CHUNK: Final = 64 * 1024
_PENDING_WRITES: Final = 256
STOP_SIGNALS: Final = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)

_log = get_logger("rawp_adapters.cli.serve")


async def serve_stdio(
    adapter: Adapter, *, workspace: Path, stdin_fd: int, stdout_fd: int, max_line_bytes: int
) -> int:
    """Bridge one session between the two file descriptors. Returns the exit code:
    0 once ``session.closed`` is written, 1 if stdout broke first, 128+N when signal N
    ended the session."""
    send, receive = anyio.create_memory_object_stream[bytes](_PENDING_WRITES)
    stopped_by: list[int] = []
    # Listening from the start: a signal that comes while the agent starts is kept
    # and ends the session as soon as it is up.
    with anyio.open_signal_receiver(*STOP_SIGNALS) as signals:
        async with (
            daemon_worker("rawp-stdin") as reader,
            daemon_worker("rawp-stdout") as writer,
            open_session(adapter, workspace=workspace) as session,
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(_read_control, session, reader, stdin_fd, max_line_bytes)
            tg.start_soon(_encode_frames, session, send)
            tg.start_soon(_close_on_signal, session, signals, stopped_by)
            written = await _write_lines(
                receive, writer, stdout_fd, on_broken=partial(tg.start_soon, session.close)
            )
            tg.cancel_scope.cancel()
    if stopped_by:
        return 128 + stopped_by[0]
    return 0 if written else 1


async def _close_on_signal(
    session: Session, signals: AsyncIterator[int], stopped_by: list[int]
) -> None:
    """The first stop signal ends the session as end of stdin does; later ones are
    ignored while it closes (every step of a close is bounded)."""
    async for signum in signals:
        if not stopped_by:
            stopped_by.append(signum)
            _log.info("signal received; ending the session", signal=signal.Signals(signum).name)
            await session.close()


async def _read_control(
    session: Session, reader: DaemonWorker, fd: int, max_line_bytes: int
) -> None:
    framer = LineFramer(max_line_bytes)
    try:
        while chunk := await reader.call(partial(os.read, fd, READ_CHUNK)):
            for line in framer.feed(chunk):
                await session.send_line(line)
        for line in framer.close():
            await session.send_line(line)
    except SessionClosedError:
        return  # the session ended first (control.session.end, or the agent exited)
    except OSError as exc:
        _log.error("reading stdin failed; ending the session", error=str(exc))
    await session.close()


async def _encode_frames(session: Session, send: MemoryObjectSendStream[bytes]) -> None:
    async with send:
        async for frame in session:
            await send.send(encode_frame(frame))


async def _write_lines(
    receive: MemoryObjectReceiveStream[bytes],
    writer: DaemonWorker,
    fd: int,
    *,
    on_broken: Callable[[], object],
) -> bool:
    """Write every encoded frame to ``fd`` until the session's stream ends. Frames that
    queued up while a write was running go out together, each line whole.

    If ``fd`` breaks, calls ``on_broken`` once, drains the rest unwritten and returns
    False.
    """
    broken = False
    async with receive:
        async for first in receive:
            batch = [first]
            while True:
                try:
                    batch.append(receive.receive_nowait())
                except (anyio.WouldBlock, anyio.EndOfStream):
                    break
            if broken:
                continue
            try:
                await writer.call(partial(_write_all, fd, b"".join(batch)))
            except OSError as exc:
                _log.error("writing stdout failed; ending the session", error=str(exc))
                broken = True
                on_broken()
    return not broken


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
