"""A scripted xcsh-style RPC agent: a real process for the process adapter's tests.

    python rpc_agent.py [--no-ready] [--terminal] [--ignore-sigterm] [--exit-before-ready N]
                        [--never-ready] [--exit-when-idle N] [--banner N]

It speaks the xcsh RPC wire on stdin/stdout. A prompt's reply is chosen by the first
word of its text:

    (anything else)  a short text answer
    TOOL <command>   the bundled extension's permission confirm for ``bash``, then the tool
                     runs (``<command>`` echoed as output) or is blocked
    APPROVAL         omp's built-in approval select for ``bash`` (before the tool starts)
    DIALOG <method>  one select/input/confirm dialog; the answer is echoed as text
    CANCEL           an input dialog that the agent cancels itself, then a text answer
    HANG             starts streaming and never ends (until ``abort``)
    GATED_HANG       a permission confirm, then hangs; an ``abort`` read before the
                     confirm's answer makes it exit 9 (the xcsh deadlock, made visible)
    EXIT <code>      one delta, then exit with that code
    KILL <signal>    one delta, then kill itself with that signal
    HUGE <bytes>     a line of that many bytes, then a text answer
    UNICODE          deltas holding U+2028 and an invalid UTF-8 byte
    FLOOD <n>        n deltas at once, then a permission confirm, then a text answer
    DIALOGS <n>      n confirm dialogs at once (their answers are not awaited), then a
                     text answer
    SPAWN            starts two ``sleep`` processes in new sessions, says their pids
    RETRY            two failing model calls with auto-retry events in between
    DOUBLE           the prompt answered twice (omp when busy), then a text answer
    REFUSE           the prompt answered with a failure
    ENV              a JSON answer: the working directory and the RAWP_*/FAKE_* variables
    IMAGES           a JSON answer: the prompt's ``images``
    NOID             answers without ids (the prompt, then get_state)

``--banner N`` writes N lines that are not JSON before anything else.
``--terminal`` ends runs with ``isTerminal: true`` (omp); otherwise the adapter has to
ask ``get_state`` (pi, xcsh). ``compact`` answers with a summary unless the session has
seen ``COMPACT_FAILS`` (then an id-less ``parse`` error, as xcsh reports exceptions).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

SUMMARY = "Summary of the fake session."
TEXT = "Hello from the fake agent."


class Agent:
    def __init__(self, argv: list[str]) -> None:
        self.terminal = "--terminal" in argv
        self.lines = self._read_lines()
        self.streaming = False
        self.compact_fails = False
        self.dialogs = 0

    # ------------------------------------------------------------ wire

    @staticmethod
    def _read_lines() -> Iterator[dict[str, Any]]:
        for raw in sys.stdin.buffer:
            try:
                message = json.loads(raw)
            except ValueError:
                emit({"type": "response", "command": "parse", "success": False, "error": "bad"})
                continue
            if isinstance(message, dict):
                yield message

    def next_line(self) -> dict[str, Any]:
        try:
            return next(self.lines)
        except StopIteration:
            sys.exit(0)

    def respond(self, command: dict[str, Any], data: Any = None, *, with_id: bool = True) -> None:
        response: dict[str, Any] = {"type": "response", "command": command["type"]}
        if with_id and "id" in command:
            response["id"] = command["id"]
        response["success"] = True
        if data is not None:
            response["data"] = data
        emit(response)

    # ------------------------------------------------------------ runs

    def run_start(self) -> None:
        self.streaming = True
        emit({"type": "agent_start"})
        emit({"type": "turn_start"})
        emit({"type": "message_start", "message": {"role": "assistant", "content": []}})

    def delta(self, text: str, index: int = 0) -> None:
        event = {"type": "text_delta", "contentIndex": index, "delta": text, "partial": {}}
        emit({"type": "message_update", "message": {}, "assistantMessageEvent": event})

    def message_end(self, stop: str = "stop", error: str | None = None) -> None:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": [],
            "stopReason": stop,
            "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0},
        }
        if error is not None:
            message["errorMessage"] = error
        emit({"type": "message_end", "message": message})

    def run_end(self) -> None:
        emit({"type": "turn_end", "message": {}, "toolResults": []})
        self.streaming = False
        end: dict[str, Any] = {"type": "agent_end", "messages": []}
        if self.terminal:
            end["isTerminal"] = True
        emit(end)

    def say(self, text: str, stop: str = "stop") -> None:
        self.run_start()
        for part in (text[: len(text) // 2], text[len(text) // 2 :]):
            self.delta(part)
        self.message_end(stop)
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

    def answer_to(self, dialog_id: str) -> dict[str, Any]:
        """Serve commands until the dialog is answered."""
        while True:
            line = self.next_line()
            if line.get("type") == "extension_ui_response" and line.get("id") == dialog_id:
                return line
            self.handle(line)

    def permission(self, command: str, call_id: str = "call-1") -> bool:
        details = {"tool_name": "bash", "tool_call_id": call_id, "tool_input": {"command": command}}
        dialog_id = self.ask("confirm", title="rawp.permission", message=json.dumps(details))
        return self.answer_to(dialog_id).get("confirmed") is True

    # ------------------------------------------------------------ prompts

    def prompt(self, command: dict[str, Any]) -> None:
        text: str = command["message"]
        word, _, rest = text.partition(" ")
        if word == "REFUSE":
            emit({"type": "response", "id": command["id"], "command": "prompt",
                  "success": False, "error": "No API key found for fake"})  # fmt: skip
            return
        if word == "NOID":
            self.respond(command, with_id=False)
        else:
            self.respond(command)
        if word == "DOUBLE":
            self.respond(command)
        if word == "COMPACT_FAILS":
            self.compact_fails = True
        if word == "IMAGES":
            self.say(json.dumps(command.get("images")))
            return
        handler = getattr(self, "on_" + word.lower(), None)
        if handler is None:
            self.say(TEXT)
        else:
            handler(rest)

    def on_env(self, _: str) -> None:
        seen = {k: v for k, v in os.environ.items() if k.startswith(("RAWP_", "FAKE_"))}
        self.say(json.dumps({"cwd": os.getcwd(), "env": seen, "home": "HOME" in os.environ}))

    def on_dialogs(self, count: str) -> None:
        for _ in range(int(count)):
            self.ask("confirm", title="Sure?", message="Go on?")
        self.say(TEXT)

    def on_tool(self, command: str) -> None:
        self.run_start()
        self.message_end("toolUse")
        allowed = self.permission(command)
        self.tool("call-1", command, allowed=allowed)
        self.run_end()
        self.say(f"allowed={allowed}")

    def on_approval(self, _: str) -> None:
        self.run_start()
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
        fields: dict[str, Any] = {"title": f"A {method}?"}
        if method == "select":
            fields["options"] = ["red", "green"]
        elif method == "confirm":
            fields["message"] = "Sure?"
        answer = self.answer_to(self.ask(method, **fields))
        answer.pop("id", None)
        answer.pop("type", None)
        self.say(json.dumps(answer, sort_keys=True))

    def on_cancel(self, _: str) -> None:
        dialog_id = self.ask("input", title="Name?")
        emit({"type": "extension_ui_request", "id": "cancel-1", "method": "cancel",
              "targetId": dialog_id})  # fmt: skip
        self.say("cancelled")

    def on_hang(self, _: str) -> None:
        self.run_start()
        self.delta("thinking about it")
        while True:
            line = self.next_line()
            if line.get("type") == "abort":
                self.aborted(line)
                return
            self.handle(line)

    def on_gated_hang(self, _: str) -> None:
        self.run_start()
        dialog_id = self.ask("confirm", title="rawp.permission", message=json.dumps(
            {"tool_name": "bash", "tool_call_id": "call-9", "tool_input": {"command": "x"}}
        ))  # fmt: skip
        first = self.next_line()
        if first.get("type") == "abort":
            print("abort read while a dialog was open: deadlock", file=sys.stderr, flush=True)
            sys.exit(9)
        assert first.get("id") == dialog_id, first
        self.on_hang("")

    def aborted(self, abort: dict[str, Any]) -> None:
        self.message_end("aborted", "Request was aborted")
        self.run_end()
        self.respond(abort)

    def on_exit(self, code: str) -> None:
        self.run_start()
        self.delta("about to exit")
        sys.exit(int(code))

    def on_kill(self, name: str) -> None:
        self.run_start()
        self.delta("about to die")
        os.kill(os.getpid(), signal.Signals[name])
        time.sleep(10)

    def on_huge(self, size: str) -> None:
        filler = b"x" * int(size)
        sys.stdout.buffer.write(b'{"type":"message_update","pad":"' + filler + b'"}\n')
        self.say(TEXT)

    def on_unicode(self, _: str) -> None:
        self.run_start()
        self.delta("line\u2028separator and \u2029 paragraph")
        sys.stdout.buffer.write(
            b'{"type":"message_update","message":{},"assistantMessageEvent":'
            b'{"type":"text_delta","contentIndex":0,"delta":"bad \xff byte"}}\n'
        )
        self.message_end()
        self.run_end()

    def on_flood(self, count: str) -> None:
        self.run_start()
        for i in range(int(count)):
            self.delta(f"d{i} ")
        self.message_end("toolUse")
        allowed = self.permission("after the flood")
        self.tool("call-1", "after the flood", allowed=allowed)
        self.run_end()

    def on_spawn(self, _: str) -> None:
        pids = []
        for _i in range(2):
            child = subprocess.Popen(
                ["sleep", "300"],
                start_new_session=True,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            pids.append(child.pid)
        self.say(" ".join(map(str, pids)))

    def on_retry(self, _: str) -> None:
        for attempt in (1, 2):
            self.run_start()
            self.message_end("error", f"529 overloaded (call {attempt})")
            self.run_end()
            if attempt == 1:
                emit({"type": "auto_retry_start", "attempt": 1, "maxAttempts": 1,
                      "delayMs": 0, "errorMessage": "529 overloaded (call 1)"})  # fmt: skip
        emit({"type": "auto_retry_end", "success": False, "attempt": 1,
              "finalError": "529 overloaded: retries exhausted"})  # fmt: skip

    # ------------------------------------------------------------ other commands

    def handle(self, command: dict[str, Any]) -> None:
        kind = command.get("type")
        if kind == "prompt":
            self.prompt(command)
        elif kind == "get_state":
            noid = not self.terminal and os.environ.get("FAKE_NOID_STATE") == "1"
            self.respond(command, {"isStreaming": self.streaming}, with_id=not noid)
        elif kind == "abort":
            self.respond(command)
        elif kind == "compact":
            if self.compact_fails:
                emit({"type": "response", "command": "parse", "success": False,
                      "error": "Failed to parse command: Nothing to compact"})  # fmt: skip
            else:
                self.respond(command, {"summary": SUMMARY, "tokensBefore": 1234})
        elif kind == "extension_ui_response":
            pass
        else:
            emit({"type": "response", "command": kind, "success": False,
                  "error": f"Unknown command: {kind}"})  # fmt: skip


def emit(message: dict[str, Any]) -> None:
    sys.stdout.buffer.write(json.dumps(message, ensure_ascii=False).encode() + b"\n")
    sys.stdout.buffer.flush()


def main(argv: list[str]) -> None:
    if "--ignore-sigterm" in argv:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if "--exit-before-ready" in argv:
        print("No models available.", file=sys.stderr, flush=True)
        sys.exit(int(argv[argv.index("--exit-before-ready") + 1]))
    if "--never-ready" in argv:
        for _line in sys.stdin:
            pass
        return
    if "--banner" in argv:
        banner = b"Loading plugins... (a banner line, not JSON)\n"
        for _ in range(int(argv[argv.index("--banner") + 1])):
            sys.stdout.buffer.write(banner)
        sys.stdout.buffer.flush()
    agent = Agent(argv)
    if "--no-ready" not in argv:
        emit({"type": "ready", "version": "0.0.1-fake"})
    if "--exit-when-idle" in argv:
        sys.exit(int(argv[argv.index("--exit-when-idle") + 1]))
    while True:
        line = agent.next_line() if "--ignore-sigterm" not in argv else _stubborn_line(agent)
        agent.handle(line)


def _stubborn_line(agent: Agent) -> dict[str, Any]:
    try:
        return next(agent.lines)
    except StopIteration:
        while True:  # stdin is closed and SIGTERM is ignored: only SIGKILL ends this
            time.sleep(1)


if __name__ == "__main__":
    main(sys.argv[1:])
