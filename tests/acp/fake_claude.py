"""An ACP agent that asks about its shell tool the way claude-agent-acp does, in an order
the test picks, for faults a real agent shows only now and then.

    python fake_claude.py announce-first | ask-first | never-announce

It advertises ``_meta.claudeCode`` at ``initialize``. Each prompt makes one ``Bash``
call: a ``tool_call`` naming the tool in ``_meta.claudeCode.toolName`` (as claude-agent-acp
sends it, title "Terminal", no input yet) and a ``session/request_permission`` whose
``toolCall`` does not name it (kind ``execute``, the real title and input), in the mode's
order (``never-announce`` sends no ``tool_call``). Then the text chunk :data:`ASKED`, so a
test knows the question is out. When the answer comes: a ``tool_call_update``
(``completed`` after an allow, else ``failed``) and the prompt's answer (``cancelled``
after a cancelled permission, else ``end_turn``). Stdlib only.
"""

from __future__ import annotations

import json
import sys
from typing import Any

ASKED = "asked"
CALL_ID = "toolu_fake_1"
COMMAND = "touch allowed.txt"


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def update(session_id: str, body: dict[str, Any]) -> None:
    send({"method": "session/update", "params": {"sessionId": session_id, "update": body}})


def announce(session_id: str) -> None:
    update(
        session_id,
        {
            "_meta": {"claudeCode": {"toolName": "Bash"}},
            "toolCallId": CALL_ID,
            "sessionUpdate": "tool_call",
            "rawInput": {},
            "status": "pending",
            "title": "Terminal",
            "kind": "execute",
            "content": [],
        },
    )


def ask(session_id: str) -> None:
    options = [
        {"kind": "allow_always", "name": "Always Allow", "optionId": "allow_always"},
        {"kind": "allow_once", "name": "Allow", "optionId": "allow"},
        {"kind": "reject_once", "name": "Reject", "optionId": "reject"},
    ]
    tool_call = {
        "toolCallId": CALL_ID,
        "rawInput": {"command": COMMAND, "description": "run a command"},
        "title": COMMAND,
        "kind": "execute",
    }
    send(
        {
            "id": "permission",
            "method": "session/request_permission",
            "params": {"sessionId": session_id, "options": options, "toolCall": tool_call},
        }
    )


def messages() -> Any:
    for line in sys.stdin:
        if line.strip():
            yield json.loads(line)


def main(mode: str) -> None:
    session_id = "fake-session"
    incoming = messages()
    for message in incoming:
        method, request_id = message.get("method"), message.get("id")
        if method == "initialize":
            capabilities = {"_meta": {"claudeCode": {"promptQueueing": True}}}
            result: dict[str, Any] = {"protocolVersion": 1, "agentCapabilities": capabilities}
            send({"id": request_id, "result": result})
        elif method == "session/new":
            send({"id": request_id, "result": {"sessionId": session_id}})
        elif method == "session/prompt":
            if mode == "announce-first":
                announce(session_id)
            ask(session_id)
            if mode == "ask-first":
                announce(session_id)
            update(
                session_id,
                {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": ASKED},
                },
            )
            answer = next(m for m in incoming if m.get("id") == "permission")
            outcome = answer.get("result", {}).get("outcome", {})
            allowed = outcome.get("optionId") in ("allow", "allow_always")
            status = "completed" if allowed else "failed"
            update(
                session_id,
                {"sessionUpdate": "tool_call_update", "toolCallId": CALL_ID, "status": status},
            )
            stop = "cancelled" if outcome.get("outcome") == "cancelled" else "end_turn"
            send({"id": request_id, "result": {"stopReason": stop}})


if __name__ == "__main__":
    main(sys.argv[1])
