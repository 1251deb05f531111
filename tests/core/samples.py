"""One valid sample payload for every frame type (text fields carry tricky characters)."""

from __future__ import annotations

from typing import Any

TRICKY = 'naïve 漢字 🙂 line\u2028sep\u2029para "quoted" back\\slash\nnewline'

SAMPLE_PAYLOADS: dict[str, dict[str, Any]] = {
    "session.capabilities": {
        "adapter_type": "process",
        "features": {"adapter_type": "process", "context_compaction": True, "abort": True},
        "agent": {"name": "omp", "version": "18.2.3"},
    },
    "session.turn.start": {"turn_id": "t1", "prompt_id": "p1"},
    "session.turn.end": {
        "turn_id": "t1",
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 10, "output_tokens": 5, "cost_usd": 0.001},
    },
    "session.error": {"error_code": "PROMPT_IN_PROGRESS", "message": TRICKY, "fatal": False},
    "session.usage": {"turn_id": "t1", "input_tokens": 3, "cache_read_tokens": 1},
    "session.compacted": {"trigger": "manual", "tokens_before": 1200, "summary": TRICKY},
    "session.closed": {"reason": "agent_exit", "exit_code": 143, "signal": "SIGTERM"},
    "agent.text.delta": {"turn_id": "t1", "index": 0, "text": TRICKY},
    "agent.text.done": {"turn_id": "t1", "index": 0, "text": TRICKY},
    "agent.thinking.delta": {"turn_id": "t1", "index": 1, "text": TRICKY, "redacted": True},
    "agent.thinking.done": {"turn_id": "t1", "index": 1, "text": TRICKY},
    "agent.interaction.request": {
        "interaction_id": "i1",
        "interaction_type": "PERMISSION",
        "timeout_ms": 30000,
        "turn_id": "t1",
        "title": "Allow bash?",
        "context": {"tool_name": "bash", "tool_input": {"command": TRICKY}, "tool_call_id": "c1"},
    },
    "agent.interaction.resolved": {
        "interaction_id": "i1",
        "outcome": "timed_out",
        "decided_by": "deadline",
        "turn_id": "t1",
    },
    "agent.error": {
        "severity": "fatal",
        "error_code": "SIGNAL_EXIT",
        "message": "killed by SIGKILL",
        "exit_code": -9,
        "signal": "SIGKILL",
        "stderr_tail": TRICKY,
    },
    "agent.state.changed": {"state": "busy"},
    "tool.invoke.request": {
        "invocation_id": "c1",
        "tool_name": "bash",
        "input": {"command": "ls", "nested": {"none": None, "list": [1, 2.5, True]}},
        "turn_id": "t1",
    },
    "tool.invoke.stream": {"invocation_id": "c1", "output": TRICKY},
    "tool.invoke.result": {
        "invocation_id": "c1",
        "output_type": "structured",
        "output": {"todos": [{"id": 1, "done": False}]},
        "is_error": False,
    },
    "control.prompt.request": {
        "prompt_id": "p1",
        "input_type": "text",
        "text": TRICKY,
        "images": [{"media_type": "image/png", "data": "aGk="}],
    },
    "control.prompt.abort": {"turn_id": "t1"},
    "control.interaction.response": {"interaction_id": "i1", "decision": "allow"},
    "control.interaction.timeout": {"interaction_id": "i1"},
    "control.session.compact": {"custom_instructions": TRICKY},
    "control.mode.switch": {"mode": "plan"},
    "control.session.end": {"reason": "user closed the tab"},
    "tool.catalog.publish": {
        "tools": [
            {
                "name": "lookup",
                "description": TRICKY,
                "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
            }
        ]
    },
    "tool.catalog.updated": {"tools": ["lookup"]},
    "control.tool.stream": {"invocation_id": "c1", "output": TRICKY},
    "control.tool.result": {
        "invocation_id": "c1",
        "output_type": "structured",
        "output": {"rows": [1, 2]},
        "is_error": False,
    },
    "control.prompt.steer": {"prompt_id": "p2", "text": TRICKY, "delivery": "follow_up"},
    "control.model.set": {"model": "fake/second", "thinking_level": "high"},
    "control.model.list": {},
    "session.model.changed": {"model": "fake/second", "thinking_level": "high"},
    "session.models": {
        "models": [{"id": "fake/second", "name": "Second", "provider": "fake"}],
        "current": "fake/first",
    },
    "control.plan.set": {"entries": [{"content": TRICKY, "status": "pending"}]},
    "agent.plan.updated": {
        "entries": [{"content": "write tests", "status": "in_progress", "phase": "build"}],
        "turn_id": "t1",
    },
}


def sample_frame(frame_type: str, seq: int = 1) -> dict[str, Any]:
    return {
        "version": "rawp-dps-1.0",
        "type": frame_type,
        "session_id": "6f1c2a8e-9d0b-4a43-9a57-2f0e1c6b1d11",
        "seq": seq,
        "timestamp": "2026-11-21T10:00:00.123Z",
        "payload": SAMPLE_PAYLOADS[frame_type],
        "metadata": {"delegation_chain": [{"agent_id": "a1", "invocation_id": "c0"}]},
    }
