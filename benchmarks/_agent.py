"""A minimal xcsh-style RPC agent for the benchmarks (a real process, stdlib only).

``python _agent.py MODE [ARG...]``:

- ``dump FILE``: after one line on stdin, write FILE to stdout as fast as possible and
  exit (for the bare baseline readers).
- ``replay FILE``: the ``ready`` line; on ``prompt``, answer it, write FILE as fast as
  possible, then a terminal ``agent_end``.
- ``paced RATE COUNT``: on ``prompt``, COUNT text deltas at RATE per second, each
  carrying ``time.monotonic_ns()`` of its write as its text.
- ``idle``: the ``ready`` line and answers; exits when stdin ends.
- ``banner COUNT``: COUNT lines that are not JSON before the ``ready`` line, then as
  ``idle`` (an agent that floods its host before it is ready).
- ``dialogs COUNT``: on ``prompt``, COUNT permission dialogs (``extension_ui_request``
  ``confirm``, distinct ids) as fast as possible, then a terminal ``agent_end``; the
  dialogs are written by a thread while stdin is still read (answers are ignored), so a
  host that answers or refuses them never blocks on a full pipe.
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
_writing = threading.Lock()
_PERMISSION = json.dumps({"tool_name": "bash", "tool_input": {"command": "ls"}})


def send(event: dict[str, Any]) -> None:
    line = json.dumps(event, separators=(",", ":")).encode() + b"\n"
    with _writing:
        _out.write(line)
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


def banner(count: int) -> None:
    for start in range(0, count, 1000):
        lines = (
            f"starting up, junk line {n:08d}\n" for n in range(start, min(count, start + 1000))
        )
        _out.write("".join(lines).encode())
    _out.flush()


def dialogs(count: int) -> None:
    for n in range(count):
        dialog = {"type": "extension_ui_request", "id": f"dialog-{n}", "method": "confirm"}
        send({**dialog, "title": "rawp.permission", "message": _PERMISSION})
    end_run()


def serve(mode: str, args: list[str]) -> None:
    if mode == "banner":
        banner(int(args[0]))
    send({"type": "ready", "version": f"bench-{mode}"})
    for line in sys.stdin.buffer:
        command = json.loads(line)
        kind = command.get("type")
        if kind == "get_state":
            answer(command, {"isStreaming": False})
        elif kind == "extension_ui_response":
            continue
        elif kind == "prompt":
            answer(command)
            if mode == "dialogs":
                threading.Thread(target=dialogs, args=(int(args[0]),), daemon=True).start()
                continue
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
