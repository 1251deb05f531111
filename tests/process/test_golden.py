"""Golden tests: real omp and pi stdout transcripts through the translator.

Each ``tests/fixtures/transcripts/*.stdout.jsonl`` (the agent's stdout byte for byte) is
replayed line by line; a turn begins at each accepted ``prompt`` answer and ends at the
``agent_end`` that leaves the agent idle. The payloads and turn outcomes must equal
``golden/<transcript>.jsonl``. After a deliberate change (or a fresh capture), rewrite
them with ``RAWP_UPDATE_GOLDEN=1 pytest tests/process/test_golden.py`` and review the diff.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from rawp_adapter_process._translate import SIGNALS, RunEnded, Translator
from rawp_adapter_process._wire import Response, decode_line

from rawp_adapters.frames import TextDelta, TextDone, ToolInvokeRequest, ToolInvokeResult

TRANSCRIPTS = Path(__file__).parents[1] / "fixtures" / "transcripts"
GOLDEN = Path(__file__).parent / "golden"
NAMES = sorted(p.name.removesuffix(".stdout.jsonl") for p in TRANSCRIPTS.glob("*.stdout.jsonl"))


def replay(transcript: Path) -> list[dict[str, Any]]:
    translator = Translator()
    entries: list[dict[str, Any]] = []
    turns = 0
    for line in transcript.read_bytes().split(b"\n"):
        if not line:
            continue
        message = decode_line(line)
        if message is None:
            continue
        if isinstance(message, Response):
            if message.command == "prompt" and message.success:
                turns += 1
                translator.begin_turn(f"turn-{turns}")
            continue
        for output in translator.feed(message):
            if not isinstance(output, SIGNALS):
                entries.append({"payload": type(output).__name__, **output.model_dump()})
            elif (
                isinstance(output, RunEnded)
                and output.terminal is not False
                and translator.turn_id is not None
            ):
                outcome = translator.finish_turn()
                usage = outcome.usage.model_dump() if outcome.usage is not None else None
                entries.append(
                    {
                        "outcome": outcome.stop_reason,
                        "error": outcome.error,
                        "usage": usage,
                    }
                )
    return entries


@pytest.mark.parametrize("name", NAMES)
def test_a_real_transcript_translates_to_its_golden_frames(name: str) -> None:
    entries = replay(TRANSCRIPTS / f"{name}.stdout.jsonl")
    golden = GOLDEN / f"{name}.jsonl"
    lines = "".join(json.dumps(entry, ensure_ascii=False) + "\n" for entry in entries)
    if os.environ.get("RAWP_UPDATE_GOLDEN") == "1":
        GOLDEN.mkdir(exist_ok=True)
        golden.write_text(lines, encoding="utf-8")
    assert lines == golden.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", NAMES)
def test_a_real_transcript_keeps_text_and_tool_calls_consistent(name: str) -> None:
    entries = replay(TRANSCRIPTS / f"{name}.stdout.jsonl")
    outcomes = [e for e in entries if "outcome" in e]
    assert outcomes, "every transcript has at least one finished turn"
    deltas: dict[tuple[str, int], str] = defaultdict(str)
    done: dict[tuple[str, int], str] = {}
    started, finished = set(), set()
    for entry in entries:
        kind = entry.get("payload")
        if kind == TextDelta.__name__:
            deltas[entry["turn_id"], entry["index"]] += entry["text"]
        elif kind == TextDone.__name__:
            done[entry["turn_id"], entry["index"]] = entry["text"]
        elif kind == ToolInvokeRequest.__name__:
            started.add(entry["invocation_id"])
        elif kind == ToolInvokeResult.__name__:
            finished.add(entry["invocation_id"])
    # A block cut short by an abort or a failure is closed by the session runtime.
    wound_down = {f"turn-{n}" for n, e in enumerate(outcomes, 1) if e["outcome"] != "end_turn"}
    assert {key for key in deltas if key[0] not in wound_down} <= set(done)
    for key, text in deltas.items():
        assert done.get(key, text) == text, key
    assert started == finished


def test_the_transcripts_cover_every_outcome_the_agents_produced() -> None:
    outcomes = {e["outcome"] for name in NAMES for e in replay(TRANSCRIPTS / f"{name}.stdout.jsonl")
                if "outcome" in e}  # fmt: skip
    assert outcomes == {"end_turn", "cancelled", "error"}
