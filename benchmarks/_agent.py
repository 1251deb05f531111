"""A minimal xcsh-style RPC agent for the benchmarks (a real process, stdlib only).

``python _agent.py MODE [ARG...]``:

- ``dump FILE``: after one line on stdin, write FILE to stdout as fast as possible and
  exit (for the bare baseline readers).
- ``replay FILE``: the ``ready`` line; on ``prompt``, answer it, write FILE as fast as
  possible, then a terminal ``agent_end``.
- ``paced RATE COUNT``: on ``prompt``, COUNT text deltas at RATE per second, each
  carrying ``time.monotonic_ns()`` of its write as its text.
- ``idle``: the ``ready`` line and answers; exits when stdin ends.
- ``stubborn``: like ``idle`` but ignores SIGTERM and the end of stdin.

Arguments the adapter appends (``-e <extension>``) are ignored.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from typing import Any

_CHUNK = 1 << 20
_out = sys.stdout.buffer


def send(event: dict[str, Any]) -> None:
    _out.write(json.dumps(event, separators=(",", ":")).encode() + b"\n")
    _out.flush()


def answer(command: dict[str, Any], data: dict[str, Any] | None = None) -> None:
    response: dict[str, Any] = {"type": "response", "command": command.get("type")}
    response.update(success=True, id=command.get("id"))
    if data is not None:
        response["data"] = data
    send(response)


def end_run() -> None:
    send({"type": "agent_end", "isTerminal": True, "messages": []})


def dump(path: str) -> None:
    with open(path, "rb") as payload:
        while chunk := payload.read(_CHUNK):
            _out.write(chunk)
    _out.flush()


def paced(rate: float, count: int) -> None:
    interval = 1.0 / rate
    head = '{"type":"message_update","assistantMessageEvent":{"type":"text_delta",'
    head += '"contentIndex":0,"delta":"'
    tail = '"},"message":{"role":"assistant","content":[]}}\n'
    due = time.monotonic()
    for _ in range(count):
        due += interval
        pause = due - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        _out.write(f"{head}{time.monotonic_ns()}{tail}".encode())
        _out.flush()


def serve(mode: str, args: list[str]) -> None:
    send({"type": "ready", "version": f"bench-{mode}"})
    for line in sys.stdin.buffer:
        command = json.loads(line)
        kind = command.get("type")
        if kind == "get_state":
            answer(command, {"isStreaming": False})
        elif kind == "prompt":
            answer(command)
            if mode == "replay":
                dump(args[0])
            elif mode == "paced":
                paced(float(args[0]), int(args[1]))
            end_run()
        else:
            answer(command)


def main() -> None:
    mode, *args = [arg for arg in sys.argv[1:4] if not arg.startswith("-")]
    if mode == "dump":
        sys.stdin.buffer.readline()
        dump(args[0])
        return
    if mode == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    serve(mode, args)
    if mode == "stubborn":
        threading.Event().wait()


if __name__ == "__main__":
    main()
