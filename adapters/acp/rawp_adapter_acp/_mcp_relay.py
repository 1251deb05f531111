"""``python -m rawp_adapter_acp._mcp_relay PORT``: the stdio MCP server an ACP agent
starts for the Master's host tools. It relays its stdin and stdout to the session's
adapter on ``127.0.0.1:PORT``, first sending the session's token (``RAWP_MCP_TOKEN``,
from the environment, never the command line); the adapter speaks MCP. Stdlib only, so
that it starts at once."""

from __future__ import annotations

import os
import socket
import sys
import threading

TOKEN_VAR = "RAWP_MCP_TOKEN"


def _pump_in(conn: socket.socket) -> None:
    while chunk := os.read(sys.stdin.fileno(), 65536):
        conn.sendall(chunk)
    conn.shutdown(socket.SHUT_WR)


def main() -> int:
    conn = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    conn.sendall(os.environ[TOKEN_VAR].encode() + b"\n")
    threading.Thread(target=_pump_in, args=(conn,), daemon=True).start()
    while chunk := conn.recv(65536):
        sys.stdout.buffer.write(chunk)
        sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
