"""``rawp-adapters serve --stdio``: any adapter as a subprocess speaking JSON lines.

:func:`rawp_adapters.host.serve_stream` over stdin and stdout. SIGTERM, SIGHUP and
SIGINT end the session like end of stdin, and the exit code is then 128+N.
"""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Final

import anyio

from rawp_adapters._adapter import Adapter
from rawp_adapters._logging import get_logger
from rawp_adapters._session import Session, SessionOptions, open_session
from rawp_adapters.cli._threads import FdReceiveStream, daemon_worker, fd_send_stream
from rawp_adapters.host import serve_stream

STOP_SIGNALS: Final = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)

_log = get_logger("rawp_adapters.cli.serve")


async def serve_stdio(
    adapter: Adapter,
    *,
    workspace: Path,
    stdin_fd: int,
    stdout_fd: int,
    max_line_bytes: int,
    options: SessionOptions | None = None,
) -> int:
    """Bridge one session between the two file descriptors. Returns the exit code:
    0 once ``session.closed`` is written, 1 if stdout broke first, 128+N when signal N
    ended the session."""
    stopped_by: list[int] = []
    # Listening from the start: a signal that comes while the agent starts is kept
    # and ends the session as soon as it is up.
    with anyio.open_signal_receiver(*STOP_SIGNALS) as signals:
        async with (
            daemon_worker("rawp-stdin") as reader,
            daemon_worker("rawp-stdout") as writer,
            open_session(adapter, workspace=workspace, options=options) as session,
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(_close_on_signal, session, signals, stopped_by)
            with fd_send_stream(writer, stdout_fd) as stdout:
                written = await serve_stream(
                    session,
                    FdReceiveStream(reader, stdin_fd),
                    stdout,
                    max_line_bytes=max_line_bytes,
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
