"""A minimal xcsh-style RPC agent that writes a file's bytes as its turn (stdlib only).

    python replay_agent.py FILE [--hold]

It writes the ``ready`` line, then on each ``prompt`` answers it and writes FILE to its
stdout as it is (whatever it holds: events, broken lines), then ``agent_end``. With
``--hold`` it writes FILE and then nothing more until it reads ``abort`` (a stream that
goes quiet after its last line). ``get_state`` is answered as idle.
"""

from __future__ import annotations

import json
import sys
from typing import Any

_out = sys.stdout.buffer


def send(event: dict[str, Any]) -> None:
    _out.write(json.dumps(event, separators=(",", ":")).encode() + b"\n")
    _out.flush()


def main() -> None:
    path = sys.argv[1]
    hold = "--hold" in sys.argv[2:]
    send({"type": "ready", "version": "replay"})
    holding = False
    for line in sys.stdin.buffer:
        command = json.loads(line)
        kind = command.get("type")
        answer: dict[str, Any] = {"type": "response", "command": kind, "success": True}
        answer["id"] = command.get("id")
        if kind == "get_state":
            answer["data"] = {"isStreaming": holding}
        send(answer)
        if kind == "prompt":
            with open(path, "rb") as replayed:
                _out.write(replayed.read())
                _out.flush()
            holding = hold
        if (kind == "prompt" and not hold) or (kind == "abort" and holding):
            holding = False
            send({"type": "agent_end", "isTerminal": True, "messages": []})


if __name__ == "__main__":
    main()
