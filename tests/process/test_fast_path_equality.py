"""The fast path builds and writes exactly the frames full validation would (issue 12).

The same agent stream (real omp lines, and broken ones: not JSON, invalid UTF-8, a lone
surrogate, raw U+2028/U+2029, an oversized line) goes through the process adapter and
the session. Every frame must equal the frame pydantic builds by validating its fields,
have the same ``model_fields_set``, be written byte for byte as ``model_dump_json`` writes
it, and decode back to itself. The same stream served by ``serve_stream`` (frames taken
and written in batches) must give the same lines, ``timestamp`` and ``session_id`` aside.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import ByteReceiveStream, ByteSendStream
from rawp_adapter_process import ProcessAdapter

from rawp_adapters import LineFramer, decode_frame, encode_frame, open_session
from rawp_adapters.frames import ClientFrame, TextDeltaFrame
from rawp_adapters.host import serve_stream
from rawp_adapters.testing import assert_valid_stream
from tests.process.helpers import FAKES

pytestmark = pytest.mark.anyio

TRANSCRIPTS = Path(__file__).parents[1] / "fixtures" / "transcripts"
MAX_LINE = 64 * 1024
WAIT = 30.0


def agent_stream() -> bytes:
    """The turn's lines of real omp transcripts, with broken lines among them."""
    lines: list[bytes] = []
    for name in ("omp_thinking", "omp_tool_bash", "omp_tool_read"):
        for line in (TRANSCRIPTS / f"{name}.stdout.jsonl").read_bytes().split(b"\n"):
            kind = json.loads(line).get("type") if line.strip() else None
            if kind in ("message_update", "message_start", "message_end", "turn_start") or (
                kind is not None and kind.startswith("tool_execution")
            ):
                lines.append(line)
    delta = '{"type":"message_update","assistantMessageEvent":{"type":"text_delta",'
    delta += '"contentIndex":0,"delta":"%s"}}'
    broken = [
        b"not json at all",
        b'{"type":"message_update","assistantMessageEvent":',
        (delta % "invalid \xff utf-8").encode("latin-1"),
        (delta % "a lone \\ud800 surrogate").encode(),
        (delta % "raw \u2028 and \u2029 separators").encode(),
        (delta % ("x" * (MAX_LINE + 10))).encode(),
        b"[1, 2, 3]",
    ]
    middle = len(lines) // 2
    return b"\n".join([*lines[:middle], *broken, *lines[middle:]]) + b"\n"


def adapter(tmp_path: Path) -> ProcessAdapter:
    replayed = tmp_path / "stream.jsonl"
    replayed.write_bytes(agent_stream())
    command = [sys.executable, "-I", "-S", str(FAKES / "replay_agent.py"), str(replayed)]
    return ProcessAdapter.from_settings({"command": command, "max_line_bytes": MAX_LINE})


def validated(frame: ClientFrame) -> ClientFrame:
    """The frame pydantic builds from the same fields, validating every one."""
    cls: Any = type(frame)
    payload_class = cls.model_fields["payload"].annotation
    rebuilt: ClientFrame = cls(
        version=frame.version,
        session_id=frame.session_id,
        seq=frame.seq,
        timestamp=frame.timestamp,
        payload=payload_class.model_validate(frame.payload.model_dump()),
        metadata=frame.metadata,
    )
    return rebuilt


async def api_frames(tmp_path: Path) -> list[ClientFrame]:
    frames: list[ClientFrame] = []
    with anyio.fail_after(WAIT):
        async with open_session(adapter(tmp_path), workspace=tmp_path) as session:
            await session.send(session.control.prompt("replay"))
            async for frame in session:
                frames.append(frame)
                if frame.type == "session.turn.end":
                    await session.close()
    return frames


class _Lines(ByteSendStream):
    def __init__(self) -> None:
        self.framer = LineFramer()
        self.lines: list[bytes] = []
        self.seen = anyio.Event()

    async def send(self, item: bytes) -> None:
        for line in self.framer.feed(item):
            assert isinstance(line, bytes)
            self.lines.append(line)
            if b'"session.turn.end"' in line:
                self.seen.set()

    async def aclose(self) -> None:
        pass


async def bridge_lines(tmp_path: Path) -> list[bytes]:
    to_session, control = anyio.create_memory_object_stream[bytes](16)
    out = _Lines()

    class _Control(ByteReceiveStream):
        async def receive(self, max_bytes: int = 65536) -> bytes:
            try:
                return await control.receive()
            except anyio.EndOfStream:
                raise anyio.EndOfStream from None

        async def aclose(self) -> None:
            pass

    with anyio.fail_after(WAIT):
        async with (
            open_session(adapter(tmp_path), workspace=tmp_path) as session,
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(serve_stream, session, _Control(), out)
            prompt = session.control.prompt("replay").model_dump_json()
            await to_session.send(prompt.encode() + b"\n")
            await out.seen.wait()
            await to_session.aclose()
    return out.lines


_TIMESTAMP = re.compile(rb'"timestamp":"[^"]*"')


def _aside(lines: list[bytes]) -> list[bytes]:
    """The lines with their timestamps and the ids the session made up blanked."""
    ids = {json.loads(lines[0])["session_id"].encode()}
    for line in lines:
        frame = json.loads(line)
        if frame["type"] == "session.turn.start":
            ids |= {frame["payload"]["turn_id"].encode(), frame["payload"]["prompt_id"].encode()}
    blanked = []
    for line in lines:
        for made_up in ids:
            line = line.replace(made_up, b"<id>")
        blanked.append(_TIMESTAMP.sub(b'"timestamp":""', line))
    return blanked


async def test_every_frame_is_the_one_full_validation_builds_and_writes(tmp_path: Path) -> None:
    frames = await api_frames(tmp_path)
    assert_valid_stream(frames)
    types = [frame.type for frame in frames]
    assert types.count("agent.error") == 1  # the oversized line; the others are skipped
    assert {"agent.thinking.delta", "agent.text.done", "tool.invoke.result"} <= set(types)
    texts = "".join(f.payload.text for f in frames if isinstance(f, TextDeltaFrame))
    assert "invalid \ufffd utf-8" in texts
    assert "\u2028 and \u2029" in texts
    for frame in frames:
        reference = validated(frame)
        assert frame == reference
        assert frame.model_fields_set == reference.model_fields_set
        line = encode_frame(frame)
        assert line == encode_frame(reference)
        assert decode_frame(line) == reference

    lines = await bridge_lines(tmp_path)
    expected = [encode_frame(validated(frame)) for frame in frames if frame.seq <= len(lines)]
    assert _aside([line + b"\n" for line in lines]) == _aside(expected)
