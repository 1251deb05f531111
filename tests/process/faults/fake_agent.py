"""A scripted xcsh-family RPC agent for fault injection: a real process, one scenario.

Run: ``python fake_agent.py SCENARIO [ARG]`` (arguments the adapter appends, such as
``-e <extension>``, are ignored). It speaks enough of ``--mode rpc``: the ``ready``
line, ``get_state``/``prompt``/``abort`` answered by id, ``message_update`` text deltas,
``message_end`` and ``agent_end`` with ``isTerminal``. Stdin is read by a thread, so
the agent hears its commands even while a full stdout pipe blocks its writes.

Scenarios (what happens on the first ``prompt`` unless said otherwise; later prompts
are answered as in ``echo``):

- ``echo``: answers ``echo: <prompt>``.
- ``exit-mid-turn CODE``: one delta, a line on stderr, then exit with CODE.
- ``signal-mid-turn NAME``: one delta, a line on stderr, then kills itself with signal NAME.
- ``exit-on-usr1 CODE``: like ``echo``; SIGUSR1 makes it exit with CODE (a death while idle).
- ``exit-before-ready CODE``: a line on stderr, exit with CODE before the ready line.
- ``ignore-sigterm``: like ``echo`` but SIGTERM and the end of stdin do not stop it.
- ``spawn-tree``: starts ``sleep 600`` and a chain of processes in new sessions (one of
  them orphaned) and answers with their pids as JSON.
- ``escape-tool [stubborn]``: runs a tool that double-forks, calls ``setsid`` and execs
  ``sleep 600`` with an empty environment (a daemon that leaves the tree and the
  session's marker behind), and answers with its own and the daemon's pid as JSON; ``stubborn``
  also ignores SIGTERM and the end of stdin, like ``ignore-sigterm``.
- ``huge-line MIB``: writes one line of MIB mebibytes, then ``after the huge line``.
- ``bad-bytes``: a banner before ``ready``; in the turn non-JSON lines, invalid UTF-8
  (outside and inside a JSON string), JSON that is no event, then ``still here``.
- ``separators``: text deltas with raw and escaped U+2028/U+2029.
- ``flood COUNT``: COUNT deltas ``d00000 ``…, a permission dialog in the middle, then
  waits for its answer and says ``answer: <confirmed>``.
- ``flood-then-exit COUNT``: COUNT deltas ``d00000 ``…, then exit with code 1.
- ``dialog-and-hang``: opens a permission dialog and waits forever.
- ``late-end``: one delta, then ignores ``abort``; ends that run only when the next
  prompt has come (so the old run's ``agent_end`` comes before the new prompt's answer),
  then answers that prompt after a model's first-token latency.
- ``stderr-flood MIB``: writes MIB mebibytes to stderr, then a last line and exits with 1.
- ``retry-then-answer``: like pi when a model call fails once: a delta, the failed
  ``message_end`` and ``agent_end``, ``auto_retry_start``, a wait of
  :data:`_RETRY_DELAY` s (answering ``get_state`` as idle, as pi does), then the
  retry's run answers ``retried: <prompt>`` and ``auto_retry_end`` succeeds.
- ``retries-give-up``: the same with two retries that fail too, then ``auto_retry_end``
  with ``success: false`` after the last ``agent_end``.
- ``mute``: never writes the ready line nor answers anything.
- ``deaf``: ready, then never reads its stdin again.
"""

from __future__ import annotations

import json
import os
import queue
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

Command = dict[str, Any]

_MIB = 1024 * 1024
_MODEL_LATENCY = 0.2
"""Seconds a model takes before its first token, where a scenario needs one."""
_PARTIAL: Command = {
    "role": "assistant",
    "content": [{"type": "text", "text": ""}],
    "api": "openai-completions",
    "provider": "fake",
    "model": "fake-model",
    "stopReason": "stop",
}
_USAGE: Command = {"input": 3, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 8}
_RETRY_DELAY = 0.3
"""Seconds the agent waits before it retries a failed model call."""
_PERMISSION_DETAILS = json.dumps({"tool_name": "bash", "tool_input": {"command": "ls"}})

_out = sys.stdout.buffer
_commands: queue.Queue[Command | None] = queue.Queue()


def write_line(data: bytes) -> None:
    _out.write(data + b"\n")
    _out.flush()


def send(event: Command, *, ascii_only: bool = True) -> None:
    write_line(json.dumps(event, ensure_ascii=ascii_only, separators=(",", ":")).encode())


def say_on_stderr(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def delta_event(text: str) -> Command:
    return {
        "type": "message_update",
        "assistantMessageEvent": {
            "type": "text_delta",
            "contentIndex": 0,
            "delta": text,
            "partial": _PARTIAL,
        },
        "message": _PARTIAL,
    }


def delta(text: str, *, ascii_only: bool = True) -> None:
    send(delta_event(text), ascii_only=ascii_only)


def end_run() -> None:
    final = {**_PARTIAL, "usage": _USAGE}
    send({"type": "message_end", "message": final})
    send({"type": "agent_end", "isTerminal": True, "messages": [final]})


def answer(command: Command, data: Command | None = None) -> None:
    response: Command = {"type": "response", "command": command["type"], "success": True}
    if "id" in command:
        response["id"] = command["id"]
    if data is not None:
        response["data"] = data
    send(response)


def read_stdin() -> None:
    for line in sys.stdin.buffer:
        try:
            command = json.loads(line)
        except ValueError:
            continue
        if isinstance(command, dict):
            _commands.put(command)
    _commands.put(None)


def next_command() -> Command | None:
    """The next command, answering ``get_state`` and ``abort`` on the way."""
    while True:
        command = _commands.get()
        if command is None:
            return None
        kind = command.get("type")
        if kind == "get_state":
            answer(command, {"isStreaming": False})
        elif kind == "abort":
            answer(command)
        else:
            return command


def serve_for(seconds: float) -> None:
    """Answer ``get_state`` (idle) and ``abort`` for ``seconds``; other commands wait."""
    deadline = time.monotonic() + seconds
    held: list[Command | None] = []
    while (left := deadline - time.monotonic()) > 0:
        try:
            command = _commands.get(timeout=left)
        except queue.Empty:
            break
        kind = None if command is None else command.get("type")
        if command is not None and kind == "get_state":
            answer(command, {"isStreaming": False})
        elif command is not None and kind == "abort":
            answer(command)
        else:
            held.append(command)
    for command in held:
        _commands.put(command)


def ask_permission(dialog_id: str) -> None:
    send(
        {
            "type": "extension_ui_request",
            "id": dialog_id,
            "method": "confirm",
            "title": "rawp.permission",
            "message": _PERMISSION_DETAILS,
        }
    )


def wait_for_answer(dialog_id: str) -> Command | None:
    while (command := next_command()) is not None:
        if command.get("type") == "extension_ui_response" and command.get("id") == dialog_id:
            return command
    return None


def die_by(signal_name: str) -> None:
    number = signal.Signals[signal_name]
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if number != signal.SIGKILL:
        signal.signal(number, signal.SIG_DFL)
    os.kill(os.getpid(), number)
    signal.pause()


def hang() -> None:
    threading.Event().wait()


# ----------------------------------------------------------------- turns


def echo_turn(text: str, arg: str) -> None:
    delta(f"echo: {text}")
    end_run()


def exit_turn(text: str, arg: str) -> None:
    delta("working")
    say_on_stderr(f"fake agent: fatal error, exiting with {arg}")
    os._exit(int(arg))


def signal_turn(text: str, arg: str) -> None:
    delta("working")
    say_on_stderr(f"fake agent: about to die by {arg}")
    die_by(arg)


def spawn_tree_turn(text: str, arg: str) -> None:
    sleeper = ["sleep", "600"]
    # A child that keeps its own child: a grandchild of a grandchild of the agent.
    keeper = (
        "import subprocess, sys, threading\n"
        f"p = subprocess.Popen({sleeper!r}, start_new_session=True)\n"
        "print(p.pid, flush=True)\n"
        "threading.Event().wait()\n"
    )
    # A child that exits at once: its sleeper is orphaned (reparented away from the tree).
    orphaner = (
        "import subprocess\n"
        f"p = subprocess.Popen({sleeper!r}, start_new_session=True)\n"
        "print(p.pid, flush=True)\n"
    )
    pids = {"sleeper": subprocess.Popen(sleeper, start_new_session=True).pid}
    children = {}
    for name, code in (("keeper", keeper), ("orphaner", orphaner)):
        child = subprocess.Popen(
            [sys.executable, "-c", code], stdout=subprocess.PIPE, start_new_session=True
        )
        assert child.stdout is not None
        children[name] = child
        pids[f"{name}-sleeper"] = int(child.stdout.readline())
    pids["keeper"] = children["keeper"].pid
    children["orphaner"].wait()
    delta(json.dumps(pids))
    end_run()


def escape_tool_turn(text: str, arg: str) -> None:
    daemonize = (
        "import os, sys\n"
        "read, write = os.pipe()\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    execed, exec_done = os.pipe()\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        null = os.open(os.devnull, os.O_RDWR)\n"
        "        for fd in (0, 1, 2):\n"
        "            os.dup2(null, fd)\n"
        "        os.execve(sys.argv[1], ['sleep', '600'], {})\n"
        "    os.close(exec_done)\n"
        "    os.read(execed, 1)  # end of file: the exec closed the other end\n"
        "    os.write(write, str(pid).encode())\n"
        "    os._exit(0)\n"
        "os.close(write)\n"
        "print(os.read(read, 64).decode(), flush=True)\n"
        "os.wait()\n"
    )
    sleep = shutil.which("sleep")
    assert sleep is not None
    tool = subprocess.run(
        [sys.executable, "-c", daemonize, sleep], capture_output=True, text=True, check=True
    )
    delta(json.dumps({"agent": os.getpid(), "daemon": int(tool.stdout)}))
    end_run()


def huge_line_turn(text: str, arg: str) -> None:
    event = json.dumps(delta_event("HUGE")).encode()
    head, tail = event.split(b"HUGE")
    _out.write(head)
    chunk = b"x" * _MIB
    for _ in range(int(arg)):
        _out.write(chunk)
    _out.write(tail + b"\n")
    _out.flush()
    delta("after the huge line")
    end_run()


def bad_bytes_turn(text: str, arg: str) -> None:
    write_line(b"Loading plugins... done (this is not JSON)")
    write_line(b"\xff\xfe\x00garbage that is not UTF-8")
    raw = json.dumps(delta_event("bad:MARK:bytes")).encode()
    write_line(raw.replace(b"MARK", b"\xff\xc3\x28"))
    write_line(b'{"type": 12}')
    write_line(b"[1, 2, 3]")
    write_line(b'{"no_type": true}')
    write_line(b'{"type":"message_update","assistantMessageEvent":')
    delta("still here")
    end_run()


def separators_turn(text: str, arg: str) -> None:
    delta("raw:\u2028:\u2029:end", ascii_only=False)
    delta("escaped:\u2028:\u2029:end", ascii_only=True)
    end_run()


def flood_turn(text: str, arg: str) -> None:
    count = int(arg)
    for i in range(count):
        if i == count // 2:
            ask_permission("flood-dialog")
        delta(f"d{i:05d} ")
    reply = wait_for_answer("flood-dialog")
    confirmed = None if reply is None else reply.get("confirmed")
    delta(f"answer: {confirmed}")
    end_run()


def flood_then_exit_turn(text: str, arg: str) -> None:
    for i in range(int(arg)):
        delta(f"d{i:05d} ")
    say_on_stderr("fake agent: crashed after the flood")
    os._exit(1)


def late_end_turn(text: str, arg: str) -> None:
    delta("working")
    while (command := next_command()) is not None and command.get("type") != "prompt":
        continue
    end_run()
    if command is not None:
        answer(command)
        send({"type": "agent_start"})
        time.sleep(_MODEL_LATENCY)
        echo_turn(str(command.get("message", "")), arg)


def stderr_flood_turn(text: str, arg: str) -> None:
    line = "fake agent: stderr noise " + "." * 100 + "\n"
    for _ in range(int(arg) * _MIB // len(line)):
        sys.stderr.write(line)
    say_on_stderr("fake agent: the last words")
    os._exit(1)


def failed_run(attempt: int, max_attempts: int | None) -> None:
    """A run whose model call breaks off, as pi reports it; then its retry announced
    (``max_attempts``) and waited for, or nothing (the retries are over)."""
    delta(f"attempt {attempt} breaks off")
    failed = {**_PARTIAL, "stopReason": "error", "errorMessage": "terminated"}
    send({"type": "message_end", "message": failed})
    send({"type": "agent_end", "messages": [failed]})
    if max_attempts is None:
        return
    send(
        {
            "type": "auto_retry_start",
            "attempt": attempt + 1,
            "maxAttempts": max_attempts,
            "delayMs": _RETRY_DELAY * 1000,
            "errorMessage": "terminated",
        }
    )
    serve_for(_RETRY_DELAY)
    send({"type": "agent_start"})


def retry_then_answer_turn(text: str, arg: str) -> None:
    failed_run(0, 3)
    delta(f"retried: {text}")
    final = {**_PARTIAL, "usage": _USAGE}
    send({"type": "message_end", "message": final})
    send({"type": "auto_retry_end", "success": True, "attempt": 1})
    send({"type": "agent_end", "messages": [final]})


def retries_give_up_turn(text: str, arg: str) -> None:
    failed_run(0, 2)
    failed_run(1, 2)
    failed_run(2, None)
    send({"type": "auto_retry_end", "success": False, "attempt": 2, "finalError": "terminated"})


def dialog_and_hang_turn(text: str, arg: str) -> None:
    ask_permission("hang-dialog")
    hang()


TURNS: dict[str, Callable[[str, str], None]] = {
    "echo": echo_turn,
    "exit-mid-turn": exit_turn,
    "signal-mid-turn": signal_turn,
    "exit-on-usr1": echo_turn,
    "ignore-sigterm": echo_turn,
    "spawn-tree": spawn_tree_turn,
    "escape-tool": escape_tool_turn,
    "huge-line": huge_line_turn,
    "bad-bytes": bad_bytes_turn,
    "separators": separators_turn,
    "flood": flood_turn,
    "flood-then-exit": flood_then_exit_turn,
    "late-end": late_end_turn,
    "stderr-flood": stderr_flood_turn,
    "dialog-and-hang": dialog_and_hang_turn,
    "retry-then-answer": retry_then_answer_turn,
    "retries-give-up": retries_give_up_turn,
}


def stubborn(scenario: str, arg: str) -> bool:
    """SIGTERM and the end of stdin do not stop the agent."""
    return scenario == "ignore-sigterm" or (scenario == "escape-tool" and arg == "stubborn")


def prepare(scenario: str, arg: str) -> None:
    """What a scenario does before the ready line."""
    if scenario == "exit-before-ready":
        say_on_stderr("fake agent: cannot read its configuration")
        os._exit(int(arg))
    if scenario == "exit-on-usr1":

        def exit_now(signum: int, frame: object) -> None:
            say_on_stderr(f"fake agent: exiting with {arg} while idle")
            os._exit(int(arg))

        signal.signal(signal.SIGUSR1, exit_now)
    if stubborn(scenario, arg):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if scenario == "bad-bytes":
        write_line(b"fake agent 1.0 starting (a banner, not JSON)")
    if scenario == "mute":
        hang()
    if scenario == "deaf":
        send({"type": "ready", "version": "fake-deaf"})
        hang()


def main() -> None:
    args = [a for a in sys.argv[1:3] if not a.startswith("-")]
    scenario, arg = args[0], (args[1] if len(args) > 1 else "")
    turn = TURNS.get(scenario)
    prepare(scenario, arg)
    threading.Thread(target=read_stdin, daemon=True).start()
    send({"type": "ready", "version": f"fake-{scenario}"})
    while (command := next_command()) is not None:
        if command.get("type") == "prompt" and turn is not None:
            answer(command)
            send({"type": "agent_start"})
            turn(str(command.get("message", "")), arg)
            turn = echo_turn
    if stubborn(scenario, arg):
        hang()


if __name__ == "__main__":
    main()
