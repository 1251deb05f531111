"""A one-shot JSON-mode agent (``xcsh --mode json <prompt>``) for ``single_turn_process``.

    python json_agent.py [--session ID] PROMPT

Prints the session header, one run answering the prompt, and exits 0. The answer says
which session was resumed. Prompts: ``FAIL`` exits 4 after a line on stderr; ``SLOW``
streams deltas for a long time (abort it); ``SPAWN`` leaves a ``sleep`` in a new session.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any

SESSION_ID = "fake-session-1"


def emit(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def delta(text: str) -> None:
    event = {"type": "text_delta", "contentIndex": 0, "delta": text, "partial": {}}
    emit({"type": "message_update", "message": {}, "assistantMessageEvent": event})


def main(argv: list[str]) -> None:
    prompt = argv[-1]
    resumed = argv[argv.index("--session") + 1] if "--session" in argv else None
    emit({"type": "session", "version": 3, "id": resumed or SESSION_ID})
    emit({"type": "agent_start"})
    if prompt == "FAIL":
        print("the model is not configured", file=sys.stderr, flush=True)
        sys.exit(4)
    if prompt == "SLOW":
        for i in range(600):
            delta(f"tick {i} ")
            time.sleep(0.05)
    if prompt == "SPAWN":
        child = subprocess.Popen(["sleep", "300"], start_new_session=True)
        delta(f"{child.pid}")
    else:
        delta(f"resumed={resumed}")
    usage = {"input": 7, "output": 3, "cacheRead": 0, "cacheWrite": 0, "cost": {"total": 0.5}}
    emit({"type": "message_end",
          "message": {"role": "assistant", "stopReason": "stop", "usage": usage}})  # fmt: skip
    emit({"type": "agent_end", "messages": []})


if __name__ == "__main__":
    main(sys.argv[1:])
