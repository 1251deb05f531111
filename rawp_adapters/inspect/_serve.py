"""The inspector's server: uvicorn on a socket bound beforehand (so the URL, with its
port and token, is printed before the first request can come)."""

from __future__ import annotations

import socket
import sys

import uvicorn

from rawp_adapters.inspect._app import create_app


def serve(listener: socket.socket, token: str, recordings: list[tuple[str, str]]) -> int:
    host, port = listener.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    sys.stdout.write(f"rawp-adapters inspect: http://{shown}:{port}/?token={token}\n")
    sys.stdout.flush()
    config = uvicorn.Config(
        create_app(token, recordings=recordings),
        log_level="warning",
        lifespan="on",
        access_log=False,
    )
    uvicorn.Server(config).run(sockets=[listener])
    return 0
