"""A small MCP server the tests give agents (the official ``mcp`` SDK), as a real process.

``python tests/support/mcp_server.py`` serves over stdio;
``python tests/support/mcp_server.py --http`` serves streamable HTTP on 127.0.0.1 on a
port of its own and prints its URL as its first line (:func:`http_server` runs it so).

Its one tool, :data:`TOOL` (``stamp``) unless ``--tool`` names it otherwise, answers
:func:`stamped` of its ``text``: a reply no model could make up, so an agent's answer
quoting it proves the call ran here.
A request must carry :data:`HEADER` when the server is started with ``--header``.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

TOOL = "stamp"
HEADER = "X-Test-Token"
SCRIPT = str(Path(__file__).resolve())


def stamped(text: str) -> str:
    return f"stamped by MCP: {text[::-1]}"


def stdio_command(tool: str = TOOL) -> tuple[str, list[str]]:
    """The program and arguments that serve over stdio, the tool named ``tool``."""
    return sys.executable, [SCRIPT, "--tool", tool]


SECRET = "secret"
LOCAL_TOOL, REMOTE_TOOL = "stamp_local", "stamp_remote"


def servers_beside_a_dead_one(url: str) -> list[dict[str, Any]]:
    """Session settings' ``mcp_servers``: ``dead`` (a command that exits at once),
    ``local`` (stdio, tool :data:`LOCAL_TOOL`) and ``remote`` (``url``, serving
    :data:`REMOTE_TOOL` to requests carrying the :data:`SECRET` header)."""
    program, args = stdio_command(LOCAL_TOOL)
    return [
        {"name": "dead", "command": sys.executable, "args": ["-c", "raise SystemExit(3)"]},
        {"name": "local", "command": program, "args": args},
        {"name": "remote", "url": url, "headers": {HEADER: SECRET}},
    ]


@contextmanager
def http_server(header: str | None = None, tool: str = TOOL) -> Iterator[str]:
    """Run the server over streamable HTTP, the tool named ``tool``; its URL while it
    runs. With ``header``, requests without ``X-Test-Token: <header>`` are refused."""
    argv = [sys.executable, SCRIPT, "--http", "--tool", tool]
    argv += ["--header", header] if header else []
    with subprocess.Popen(argv, stdout=subprocess.PIPE, text=True) as process:
        try:
            assert process.stdout is not None
            url = process.stdout.readline().strip()
            if not url:
                raise RuntimeError(f"the MCP server did not start ({process.wait(5)})")
            yield url
        finally:
            process.terminate()
            process.wait(10)


def _option(flag: str) -> str | None:
    return sys.argv[sys.argv.index(flag) + 1] if flag in sys.argv else None


def _serve() -> None:
    import anyio
    import uvicorn
    from mcp.server.mcpserver import MCPServer
    from starlette.types import ASGIApp, Receive, Scope, Send

    server = MCPServer("rawp-test-mcp")

    @server.tool(name=_option("--tool") or TOOL, description="Stamp a text (answers it stamped).")
    def stamp(text: str) -> str:
        return stamped(text)

    if "--http" not in sys.argv:
        server.run("stdio")
        return
    token = _option("--header")
    app = server.streamable_http_app()

    def guarded(inner: ASGIApp) -> ASGIApp:
        async def guard(scope: Scope, receive: Receive, send: Send) -> None:
            headers = dict(scope.get("headers", []))
            if (
                scope["type"] == "http"
                and headers.get(HEADER.lower().encode()) != (token or "").encode()
            ):
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"no token"})
                return
            await inner(scope, receive, send)

        return guard if token else inner

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()  # before the URL is printed: a client may connect at once
    port = sock.getsockname()[1]
    config = uvicorn.Config(guarded(app), log_level="warning", lifespan="on")
    print(f"http://127.0.0.1:{port}/mcp", flush=True)
    anyio.run(lambda: uvicorn.Server(config).serve(sockets=[sock]))


if __name__ == "__main__":
    _serve()
