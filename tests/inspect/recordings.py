"""Recordings to open in the inspector, made from a real demo-core session."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

CLI = [sys.executable, "-m", "rawp_adapters.cli"]
RENAMED = ("turn_id", "interaction_id", "invocation_id", "prompt_id")


def record_demo_session(workspace: Path, prompt: str = "Write hi to notes.txt") -> list[str]:
    """The frames of one demo-core session with one allowed turn, as JSONL lines."""
    done = subprocess.run(
        [*CLI, "run", "--jsonl", "--yes", "--workspace", str(workspace), prompt],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.splitlines()


def long_recording(lines: list[str], frames: int) -> list[str]:
    """A valid recording of about ``frames`` frames: the session's turn played again
    and again (ids made new for each), numbered on, then its close."""
    parsed = [json.loads(line) for line in lines]
    first = next(i for i, f in enumerate(parsed) if f["type"] == "session.turn.start")
    last = max(i for i, f in enumerate(parsed) if f["type"] == "session.turn.end")
    head, turn, tail = parsed[:first], parsed[first : last + 1], parsed[last + 1 :]
    out: list[dict[str, Any]] = list(head)
    copy = 0
    while len(out) + len(turn) + len(tail) <= frames:
        copy += 1
        for frame in turn:
            payload = {
                key: f"{value}-{copy}" if key in RENAMED else value
                for key, value in frame["payload"].items()
            }
            out.append({**frame, "payload": payload})
    out.extend(tail)
    return [json.dumps({**frame, "seq": seq}) for seq, frame in enumerate(out, start=1)]
