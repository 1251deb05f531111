"""An app-server that misbehaves the ways a real one might after a version bump, for
faults the real binary does not show on demand. Stdlib only::

    python fake_app_server.py

It answers ``initialize`` and ``thread/start``, refuses ``model/list`` (an older server),
and answers each ``turn/start`` with: a line that is not JSON, an
``item/agentMessage/delta`` without its ``delta``, a request the adapter does not serve
(``item/tool/requestUserInput``), then, once that request is answered, the text
:data:`REFUSED` followed by the JSON-RPC error code it got, and ``turn/completed``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

REFUSED = "refused with "
THREAD = "thread-fake"
TURN = "turn-fake"
QUESTION_ID = "question-1"


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def note(method: str, **params: Any) -> None:
    send({"method": method, "params": {"threadId": THREAD, "turnId": TURN, **params}})


def answer(message: dict[str, Any]) -> None:
    method, request_id = message.get("method"), message.get("id")
    if method == "initialize":
        send({"id": request_id, "result": {"userAgent": "fake/0.0.1 (test)"}})
    elif method == "thread/start":
        result = {"thread": {"id": THREAD}, "model": "fake-model", "reasoningEffort": None}
        send({"id": request_id, "result": result})
    elif method == "model/list":
        send({"id": request_id, "error": {"code": -32601, "message": "no model/list here"}})
    elif method == "turn/start":
        send(
            {
                "id": request_id,
                "result": {"turn": {"id": TURN, "items": [], "status": "inProgress"}},
            }
        )
        turn = {"id": TURN, "items": [], "status": "inProgress"}
        send({"method": "turn/started", "params": {"threadId": THREAD, "turn": turn}})
        sys.stdout.write("this is not JSON\n")
        note("item/agentMessage/delta", itemId="msg-1")
        request = {"threadId": THREAD, "turnId": TURN, "itemId": "ask-1", "questions": []}
        send({"id": QUESTION_ID, "method": "item/tool/requestUserInput", "params": request})
    elif request_id == QUESTION_ID and method is None:
        code = message.get("error", {}).get("code")
        note("item/agentMessage/delta", itemId="msg-1", delta=f"{REFUSED}{code}")
        item = {"type": "agentMessage", "id": "msg-1", "text": f"{REFUSED}{code}"}
        note("item/completed", item=item, completedAtMs=0)
        turn = {"id": TURN, "items": [], "status": "completed"}
        send({"method": "turn/completed", "params": {"threadId": THREAD, "turn": turn}})


def main() -> None:
    for line in sys.stdin:
        answer(json.loads(line))


if __name__ == "__main__":
    main()
