"""The inspector's server: uvicorn on a socket bound beforehand (so the URL, with its
port and token, is printed before the first request can come)."""

from __future__ import annotations

import socket
import sys
from pathlib import Path
from types import FrameType

import uvicorn

from rawp_adapters.inspect._app import Inspector, create_app

GRACEFUL_SHUTDOWN_S = 5
"""A backstop: the pages' streams end by themselves within a second of a stop."""


def serve(
    listener: socket.socket,
    token: str,
    recordings: list[tuple[str, str]],
    record_dir: Path | None,
) -> int:
    host, port = listener.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    sys.stdout.write(f"rawp-adapters inspect: http://{shown}:{port}/?token={token}\n")
    sys.stdout.flush()
    app = create_app(token, recordings=recordings, record_dir=record_dir)
    config = uvicorn.Config(
        app,
        log_level="warning",
        lifespan="on",
        access_log=False,
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
    )
    _Server(config, app.state.inspector).run(sockets=[listener])
    return 0


class _Server(uvicorn.Server):
    """uvicorn's server, which on Ctrl-C or SIGTERM also tells the pages' streams to
    end: uvicorn waits for every open response before it stops, and a page reading a
    feed never ends its own."""

    def __init__(self, config: uvicorn.Config, inspector: Inspector) -> None:
        super().__init__(config)
        self.inspector = inspector

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self.inspector.stopping = True
        super().handle_exit(sig, frame)
