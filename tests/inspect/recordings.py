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


def with_delegated_host_call(lines: list[str]) -> list[str]:
    """The session with a call of the Master's tool ``delegate`` in its turn: answered by
    the Master, its sub-agent's output relayed with the delegation chain."""
    frames = [json.loads(line) for line in lines]
    start = next(i for i, f in enumerate(frames) if f["type"] == "session.turn.start")
    turn = frames[start]
    envelope = {k: turn[k] for k in ("version", "session_id", "timestamp")}
    turn_id = turn["payload"]["turn_id"]
    chain = [{"agent_id": "parent", "invocation_id": "host-1"}]
    call = [
        {
            **envelope,
            "type": "tool.invoke.request",
            "payload": {
                "invocation_id": "host-1",
                "tool_name": "delegate",
                "input": {"task": "say hi"},
                "turn_id": turn_id,
                "executor": "master",
                "timeout_ms": 30000,
            },
        },
        {
            **envelope,
            "type": "tool.invoke.stream",
            "metadata": {"delegation_chain": chain},
            "payload": {"invocation_id": "host-1", "output": "sub-agent says hi"},
        },
        {
            **envelope,
            "type": "control.tool.result",
            "seq": 1,
            "payload": {"invocation_id": "host-1", "output_type": "text", "output": "done"},
        },
        {
            **envelope,
            "type": "tool.invoke.result",
            "payload": {
                "invocation_id": "host-1",
                "output_type": "text",
                "output": "done",
                "turn_id": turn_id,
            },
        },
    ]
    out = [*frames[: start + 1], *call, *frames[start + 1 :]]
    seq = 0
    for frame in out:
        if not frame["type"].startswith("control."):
            seq += 1
            frame["seq"] = seq
    return [json.dumps(frame) for frame in out]
