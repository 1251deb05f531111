"""A scripted xcsh-family RPC agent: a real process for the process adapter's tests.

    python rpc_agent.py [FLAG ...]

It speaks the ``--mode rpc`` wire on stdin/stdout. Flags shape the process (arguments it
does not know, such as the adapter's ``-e <extension>``, are ignored):

    --no-ready              no ready line: it is ready once it answers ``get_state`` (pi)
    --terminal              runs end with ``isTerminal: true`` (omp); otherwise the adapter
                            has to ask ``get_state`` (pi, xcsh)
    --no-ids                responses carry no ``id`` (matched by their command)
    --compact-fails         ``compact`` fails with an id-less ``parse`` error (as xcsh
                            reports exceptions); otherwise it answers with a summary
    --banner N              N lines that are not JSON before the ready line
    --exit-before-ready N   "No models available." on stderr, then exit N
    --mute                  never writes a line nor reads one
    --deaf                  the ready line, then never reads its stdin again
    --exit-on-usr1 N        SIGUSR1 makes it exit N (a death while idle)
    --ignore-sigterm        neither SIGTERM nor the end of stdin stops it
    --models-after S        answers ``get_available_models`` (with no model) after S seconds,
                            as a loaded host may; otherwise it does not know the command

The first word of a prompt picks what its turn does:

    (anything else)    ``echo: <prompt>``
    TOOL <command>     the bundled extension's permission confirm for ``bash``, then the
                       tool runs (``<command>`` echoed as output) or is blocked, then
                       ``allowed=<bool>``
    FLOOD <n>          TOOL with n deltas ``d00000 ``… around the confirm
    APPROVAL           omp's built-in approval select for ``bash`` (before the tool starts)
    DIALOG <method>    one select/input/confirm dialog; the answer is echoed as JSON
    DIALOGS <n>        n confirm dialogs (not awaited), then a text answer
    CANCEL             an input dialog that the agent cancels itself
    HANG               one delta, then nothing until ``abort``
    GATED_HANG         a permission confirm, then HANG; an ``abort`` read before the
                       confirm's answer makes it exit 9 (the xcsh deadlock, made visible)
    LATE_END           one delta, ``abort`` ignored; the run ends only when the next prompt
                       has come (before that prompt is answered, after a model's latency)
    EXIT <code> [n]    n deltas ``d00000 ``… (1 by default), a line on stderr, exit
    KILL <signal>      one delta, a line on stderr, then killed by that signal
    STDERR_FLOOD <MiB> that much on stderr, then its last words, then exit 1
    HUGE <MiB>         a delta line of that many MiB, then ``after the huge line``
    BAD_BYTES          non-JSON lines, invalid UTF-8 (outside and inside a JSON string),
                       JSON that is no event, then ``still here``
    SEPARATORS         deltas with raw and escaped U+2028/U+2029
    RETRY <fails> <max>  a model call that fails ``fails`` times and is retried up to
                       ``max`` times (pi's auto-retry: ``agent_end``, ``auto_retry_start``,
                       a wait answering ``get_state`` as idle, a new run); it ends with
                       ``the retry's answer`` or gives up
    SPAWN              starts sleepers in new sessions, one behind a child, one orphaned;
                       says their pids as JSON
    ESCAPE             a tool that double-forks, calls ``setsid`` and execs ``sleep`` with
                       an empty environment; says its own and the daemon's pid as JSON
    DOUBLE             the prompt answered twice (omp when busy), then a text answer
    REFUSE             the prompt answered with a failure
    ENV                the working directory and the whole environment as JSON
    IMAGES             the prompt's ``images`` as JSON
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
from typing import Any, NoReturn

Message = dict[str, Any]

MIB = 1024 * 1024
MODEL_LATENCY = 0.2
"""Seconds a model takes before its first token, where a turn needs one."""
RETRY_DELAY = 0.3
"""Seconds the agent waits before it retries a failed model call."""
USAGE = {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0}


def write(line: bytes) -> None:
    sys.stdout.buffer.write(line + b"\n")
    sys.stdout.buffer.flush()


def emit(message: Message, *, ascii_only: bool = False) -> None:
    write(json.dumps(message, ensure_ascii=ascii_only).encode())


def complain(text: str) -> None:
    sys.stderr.write(f"fake agent: {text}\n")
    sys.stderr.flush()


def delta_event(text: str) -> Message:
    event = {"type": "text_delta", "contentIndex": 0, "delta": text, "partial": {}}
    return {"type": "message_update", "message": {}, "assistantMessageEvent": event}


def hang() -> NoReturn:
    while True:
        threading.Event().wait()


def die_by(name: str) -> NoReturn:
    number = signal.Signals[name]
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if number != signal.SIGKILL:
        signal.signal(number, signal.SIG_DFL)
    os.kill(os.getpid(), number)
    hang()


class Agent:
    def __init__(self, argv: list[str]) -> None:
        self.terminal = "--terminal" in argv
        self.ids = "--no-ids" not in argv
        self.compact_fails = "--compact-fails" in argv
        self.stubborn = "--ignore-sigterm" in argv
        flag = "--models-after"
        self.models_after = float(argv[argv.index(flag) + 1]) if flag in argv else None
        self.streaming = False
        self.dialogs = 0
        self.commands: queue.Queue[Message | None] = queue.Queue()

    # ------------------------------------------------------------ wire

    def read_stdin(self) -> None:
        """On a thread, so commands are heard even while a full stdout blocks a write."""
        for raw in sys.stdin.buffer:
            try:
                message = json.loads(raw)
            except ValueError:
                continue
            if isinstance(message, dict):
                self.commands.put(message)
        self.commands.put(None)

    def next(self, timeout: float | None = None) -> Message:
        """The next command (``queue.Empty`` after ``timeout``); at the end of stdin the
        agent exits, or hangs if it is stubborn."""
        command = self.commands.get(timeout=timeout)
        if command is None:
            if self.stubborn:
                hang()
            sys.exit(0)
        return command

    def serve(self, until: Callable[[Message], bool]) -> Message:
        """Handle commands until one that ``until`` picks, and return that one."""
        while not until(command := self.next()):
            self.handle(command)
        return command

    def serve_for(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                self.handle(self.next(timeout=left))
            except queue.Empty:
                return

    def respond(self, command: Message, data: Any = None, *, error: str | None = None) -> None:
        response: Message = {"type": "response", "command": command["type"]}
        if self.ids and "id" in command:
            response["id"] = command["id"]
        response["success"] = error is None
        if error is not None:
            response["error"] = error
        if data is not None:
            response["data"] = data
        emit(response)

    def handle(self, command: Message) -> None:
        kind = command.get("type")
        if kind == "prompt":
            self.prompt(command)
        elif kind == "get_state":
            self.respond(command, {"isStreaming": self.streaming})
        elif kind == "abort":
            self.respond(command)
        elif kind == "get_available_models" and self.models_after is not None:
            time.sleep(self.models_after)
            self.respond(command, {"models": []})
        elif kind == "compact" and self.compact_fails:
            emit({"type": "response", "command": "parse", "success": False,
                  "error": "Failed to parse command: Nothing to compact"})  # fmt: skip
        elif kind == "compact":
            self.respond(command, {"summary": "Summary of the fake session.", "tokensBefore": 1234})
        elif kind != "extension_ui_response":
            emit({"type": "response", "command": kind, "success": False,
                  "error": f"Unknown command: {kind}"})  # fmt: skip

    # ------------------------------------------------------------ runs

    def start(self) -> None:
        self.streaming = True
        emit({"type": "agent_start"})
        emit({"type": "turn_start"})
        emit({"type": "message_start", "message": {"role": "assistant", "content": []}})

    def delta(self, text: str, *, ascii_only: bool = False) -> None:
        emit(delta_event(text), ascii_only=ascii_only)

    def message_end(self, stop: str = "stop", error: str | None = None) -> None:
        message: Message = {"role": "assistant", "content": [], "stopReason": stop, "usage": USAGE}
        if error is not None:
            message["errorMessage"] = error
        emit({"type": "message_end", "message": message})

    def run_end(self) -> None:
        emit({"type": "turn_end", "message": {}, "toolResults": []})
        self.streaming = False
        end: Message = {"type": "agent_end", "messages": []}
        if self.terminal:
            end["isTerminal"] = True
        emit(end)

    def say(self, text: str) -> None:
        self.start()
        self.delta(text)
        self.message_end()
        self.run_end()

    def tool(self, call_id: str, command: str, *, allowed: bool) -> None:
        emit({"type": "tool_execution_start", "toolCallId": call_id, "toolName": "bash",
              "args": {"command": command}})  # fmt: skip
        if allowed:
            partial = {"content": [{"type": "text", "text": command}]}
            emit({"type": "tool_execution_update", "toolCallId": call_id, "toolName": "bash",
                  "partialResult": partial})  # fmt: skip
            result, error = command, False
        else:
            result, error = "Permission denied by the host for tool bash", True
        content = [{"type": "text", "text": result}]
        emit({"type": "tool_execution_end", "toolCallId": call_id, "toolName": "bash",
              "result": {"content": content}, "isError": error})  # fmt: skip

    # ------------------------------------------------------------ dialogs

    def ask(self, method: str, **fields: Any) -> str:
        self.dialogs += 1
        dialog_id = f"dialog-{self.dialogs}"
        emit({"type": "extension_ui_request", "id": dialog_id, "method": method, **fields})
        return dialog_id

    def ask_permission(self, call_id: str, command: str) -> str:
        details = {"tool_name": "bash", "tool_call_id": call_id, "tool_input": {"command": command}}
        return self.ask("confirm", title="rawp.permission", message=json.dumps(details))

    def answer_to(self, dialog_id: str) -> Message:
        return self.serve(
            lambda c: c.get("type") == "extension_ui_response" and c.get("id") == dialog_id
        )

    # ------------------------------------------------------------ prompts

    def prompt(self, command: Message) -> None:
        text: str = command.get("message", "")
        word, _, arg = text.partition(" ")
        if word == "REFUSE":
            self.respond(command, error="No API key found for fake")
            return
        self.respond(command)
        if word == "DOUBLE":
            self.respond(command)
        turn = getattr(self, f"on_{word.lower()}", None) if word.isupper() else None
        if word == "IMAGES":
            self.say(json.dumps(command.get("images")))
        elif turn is not None:
            turn(arg)
        else:
            self.say(f"echo: {text}")

    def on_tool(self, command: str, flood: int = 0) -> None:
        self.start()
        dialog_id = None
        for i in range(flood):
            if i == flood // 2:
                dialog_id = self.ask_permission("call-1", command)
            self.delta(f"d{i:05d} ")
        self.message_end("toolUse")
        answer = self.answer_to(dialog_id or self.ask_permission("call-1", command))
        allowed = answer.get("confirmed") is True
        self.tool("call-1", command, allowed=allowed)
        self.run_end()
        self.say(f"allowed={allowed}")

    def on_flood(self, count: str) -> None:
        self.on_tool("after the flood", int(count))

    def on_approval(self, _: str) -> None:
        self.start()
        call = {"type": "toolCall", "id": "call-7", "name": "bash", "arguments": {"command": "ls"}}
        event = {"type": "toolcall_end", "contentIndex": 0, "toolCall": call, "partial": {}}
        emit({"type": "message_update", "message": {}, "assistantMessageEvent": event})
        self.message_end("toolUse")
        dialog_id = self.ask(
            "select", title="Allow tool: bash\nCommand: ls", options=["Approve", "Deny"]
        )
        allowed = self.answer_to(dialog_id).get("value") == "Approve"
        self.tool("call-7", "ls", allowed=allowed)
        self.run_end()

    def on_dialog(self, method: str) -> None:
        fields: Message = {"title": f"A {method}?"}
        if method == "select":
            fields["options"] = ["red", "green"]
        elif method == "confirm":
            fields["message"] = "Sure?"
        answer = self.answer_to(self.ask(method, **fields))
        answer.pop("id", None)
        answer.pop("type", None)
        self.say(json.dumps(answer, sort_keys=True))

    def on_dialogs(self, count: str) -> None:
        for _ in range(int(count)):
            self.ask("confirm", title="Sure?", message="Go on?")
        self.say("no answers awaited")

    def on_cancel(self, _: str) -> None:
        dialog_id = self.ask("input", title="Name?")
        emit({"type": "extension_ui_request", "id": "cancel-1", "method": "cancel",
              "targetId": dialog_id})  # fmt: skip
        self.say("cancelled")

    def on_hang(self, _: str) -> None:
        self.start()
        self.hang_until_abort()

    def on_gated_hang(self, _: str) -> None:
        self.start()
        dialog_id = self.ask_permission("call-9", "x")
        first = self.next()
        if first.get("type") == "abort":
            complain("abort read while a dialog was open: deadlock")
            sys.exit(9)
        assert first.get("id") == dialog_id, first
        self.hang_until_abort()

    def hang_until_abort(self) -> None:
        self.delta("thinking about it")
        abort = self.serve(lambda c: c.get("type") == "abort")
        self.message_end("aborted", "Request was aborted")
        self.run_end()
        self.respond(abort)

    def on_late_end(self, _: str) -> None:
        self.start()
        self.delta("working")
        prompt = self.serve(lambda c: c.get("type") == "prompt")
        self.message_end()
        self.run_end()
        self.respond(prompt)
        self.start()
        time.sleep(MODEL_LATENCY)
        self.delta(f"echo: {prompt.get('message')}")
        self.message_end()
        self.run_end()

    def on_exit(self, arg: str) -> None:
        code, _, count = arg.partition(" ")
        self.start()
        for i in range(int(count or 1)):
            self.delta(f"d{i:05d} ")
        complain(f"fatal error, exiting with {code}")
        os._exit(int(code))

    def on_kill(self, name: str) -> None:
        self.start()
        self.delta("working")
        complain(f"about to die by {name}")
        die_by(name)

    def on_stderr_flood(self, mib: str) -> None:
        self.start()
        line = "fake agent: stderr noise " + "." * 100 + "\n"
        for _ in range(int(mib) * MIB // len(line)):
            sys.stderr.write(line)
        complain("the last words")
        os._exit(1)

    def on_huge(self, mib: str) -> None:
        self.start()
        head, tail = json.dumps(delta_event("HUGE")).encode().split(b"HUGE")
        out = sys.stdout.buffer
        out.write(head)
        for _ in range(int(mib)):
            out.write(b"x" * MIB)
        write(tail)
        self.delta("after the huge line")
        self.message_end()
        self.run_end()

    def on_bad_bytes(self, _: str) -> None:
        self.start()
        write(b"Loading plugins... done (this is not JSON)")
        write(b"\xff\xfe\x00garbage that is not UTF-8")
        write(json.dumps(delta_event("bad:MARK:bytes")).encode().replace(b"MARK", b"\xff\xc3\x28"))
        write(b'{"type": 12}')
        write(b"[1, 2, 3]")
        write(b'{"no_type": true}')
        write(b'{"type":"message_update","assistantMessageEvent":')
        self.delta("still here")
        self.message_end()
        self.run_end()

    def on_separators(self, _: str) -> None:
        self.start()
        self.delta("raw:\u2028:\u2029:end")
        self.delta("escaped:\u2028:\u2029:end", ascii_only=True)
        self.message_end()
        self.run_end()

    def on_retry(self, arg: str) -> None:
        fails, retries = map(int, arg.split())
        for attempt in range(min(fails, retries + 1)):
            self.start()
            self.delta(f"attempt {attempt} breaks off")
            self.message_end("error", "terminated")
            self.run_end()
            if attempt < retries:
                emit({"type": "auto_retry_start", "attempt": attempt + 1, "maxAttempts": retries,
                      "delayMs": RETRY_DELAY * 1000, "errorMessage": "terminated"})  # fmt: skip
                self.serve_for(RETRY_DELAY)
        if fails > retries:
            emit({"type": "auto_retry_end", "success": False, "attempt": retries,
                  "finalError": "terminated: retries exhausted"})  # fmt: skip
            return
        self.start()
        self.delta("the retry's answer")
        self.message_end()
        emit({"type": "auto_retry_end", "success": True, "attempt": fails})
        self.run_end()

    def on_spawn(self, _: str) -> None:
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
        self.say(json.dumps(pids))

    def on_escape(self, _: str) -> None:
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
        self.say(json.dumps({"agent": os.getpid(), "daemon": int(tool.stdout)}))

    def on_env(self, _: str) -> None:
        self.say(json.dumps({"cwd": os.getcwd(), "env": dict(os.environ)}))


def main(argv: list[str]) -> None:
    def number(flag: str) -> int | None:
        return int(argv[argv.index(flag) + 1]) if flag in argv else None

    agent = Agent(argv)
    if agent.stubborn:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if (code := number("--exit-on-usr1")) is not None:

        def exit_now(signum: int, frame: object, code: int = code) -> None:
            complain(f"exiting with {code} while idle")
            os._exit(code)

        signal.signal(signal.SIGUSR1, exit_now)
    if (code := number("--exit-before-ready")) is not None:
        print("No models available.", file=sys.stderr, flush=True)
        sys.exit(code)
    if "--mute" in argv:
        hang()
    if banner := number("--banner"):
        sys.stdout.buffer.write(b"fake agent starting (a banner, not JSON)\n" * banner)
    if "--no-ready" not in argv:
        emit({"type": "ready", "version": "0.0.1-fake"})
    if "--deaf" in argv:
        hang()
    # The reader thread starts with SIGUSR1 blocked: a signal delivered to it would leave
    # the main thread asleep in its queue, the handler never run (CPython runs handlers on
    # the main thread only, and only wakes it if the signal interrupts it).
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    threading.Thread(target=agent.read_stdin, daemon=True).start()
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR1})
    while True:
        agent.handle(agent.next())


if __name__ == "__main__":
    main(sys.argv[1:])
