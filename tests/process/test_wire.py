"""Decoding the agent's stdout lines and encoding commands (sans-IO)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rawp_adapter_process._wire import (
    AgentEnd,
    MessageUpdate,
    Response,
    ToolExecutionUpdate,
    UiRequest,
    WireError,
    decode_batch,
    decode_compaction,
    decode_line,
    decode_state,
    encode_command,
)

from rawp_adapters import OversizedLine

TRANSCRIPTS = Path(__file__).parents[1] / "fixtures" / "transcripts"


def test_a_message_update_decodes_only_the_assistant_event() -> None:
    partial = {"role": "assistant", "content": [{"type": "text", "text": "Hel" * 100}]}
    line = json.dumps(
        {
            "type": "message_update",
            "message": partial,
            "assistantMessageEvent": {
                "type": "text_delta",
                "contentIndex": 2,
                "delta": "lo",
                "partial": partial,
            },
        }
    ).encode()
    message = decode_line(line)
    assert isinstance(message, MessageUpdate)
    event = message.assistantMessageEvent
    assert (event.type, event.contentIndex, event.delta) == ("text_delta", 2, "lo")


def test_a_response_with_its_id_first_is_found_by_its_type() -> None:
    message = decode_line(b'{"id":"p1","type":"response","command":"prompt","success":true}')
    assert message == Response(id="p1", command="prompt", success=True)


def test_response_data_stays_undecoded_until_asked_for() -> None:
    message = decode_line(
        b'{"type":"response","id":"s","command":"get_state","success":true,'
        b'"data":{"isStreaming":true,"messages":[1,2,3]}}'
    )
    assert isinstance(message, Response)
    assert decode_state(message.data).isStreaming is True
    assert decode_compaction(message.data).summary is None


def test_types_nobody_reads_are_not_decoded() -> None:
    assert decode_line(b'{"type":"available_commands_update","commands":[1,2]}') is None
    assert decode_line(b'{"type":"turn_start"}') is None


def test_a_line_that_is_not_a_json_object_is_an_error() -> None:
    for line in (b"not json at all", b"[1, 2]", b'{"no_type": 1}', b'"text"'):
        with pytest.raises(WireError):
            decode_line(line)


def test_a_known_type_of_the_wrong_shape_is_an_error() -> None:
    with pytest.raises(WireError):
        decode_line(b'{"type":"tool_execution_start","toolCallId":5}')


def test_invalid_utf8_is_replaced_rather_than_losing_the_line() -> None:
    message = decode_line(
        b'{"type":"tool_execution_update","toolCallId":"t","partialResult":'
        b'{"content":[{"type":"text","text":"a\xffb"}]}}'
    )
    assert isinstance(message, ToolExecutionUpdate)
    assert message.partialResult is not None
    assert message.partialResult.content[0].text == "a\ufffdb"


def test_raw_line_separators_inside_strings_are_kept() -> None:
    line = '{"type":"extension_ui_request","id":"1","method":"input","title":"a\u2028b\u2029c"}'
    message = decode_line(line.encode())
    assert isinstance(message, UiRequest)
    assert message.title == "a\u2028b\u2029c"


def test_agent_end_keeps_only_what_the_turn_needs_of_its_messages() -> None:
    message = decode_line(
        b'{"type":"agent_end","isTerminal":false,"messages":[{"role":"user","content":"hi"},'
        b'{"role":"assistant","content":[],"stopReason":"error","errorMessage":"boom"}]}'
    )
    assert isinstance(message, AgentEnd)
    assert message.isTerminal is False
    assert [(m.role, m.stopReason, m.errorMessage) for m in message.messages] == [
        ("user", None, None),
        ("assistant", "error", "boom"),
    ]


def test_a_command_is_one_compact_json_line() -> None:
    line = encode_command({"id": "rawp-1", "type": "prompt", "message": "a\nb\u2028"})
    assert line.endswith(b"\n")
    assert line.count(b"\n") == 1
    assert json.loads(line) == {"id": "rawp-1", "type": "prompt", "message": "a\nb\u2028"}


@pytest.mark.parametrize("transcript", sorted(TRANSCRIPTS.glob("*.stdout.jsonl")), ids=str)
def test_a_batch_of_real_agent_lines_decodes_as_each_line_does_on_its_own(
    transcript: Path,
) -> None:
    lines = [line for line in transcript.read_bytes().split(b"\n") if line]
    one_by_one = [message for line in lines if (message := decode_line(line)) is not None]
    batch = decode_batch(lines)
    assert batch is not None, "every type these agents write is listed"
    assert batch == one_by_one


@pytest.mark.parametrize(
    "odd_line",
    [
        b"not json at all",
        b'{"type":"message_update","assistantMessageEvent":',
        b'{"type":"a_type_nobody_listed"}',
        b'{"type":"agent_start"}{"type":"agent_start"}',
        b'{"type":"tool_execution_start","toolCallId":5}',
        b'{"type":"ready","type":"agent_start"}',
        b'{"type":"message_end","message":{"role":"a\xffb"}}',
        b"[1, 2]",
    ],
)
def test_a_batch_with_a_line_that_is_not_a_listed_event_is_left_to_line_by_line(
    odd_line: bytes,
) -> None:
    assert decode_batch([b'{"type":"agent_start"}', odd_line]) is None


def test_a_batch_with_an_oversized_line_is_left_to_line_by_line() -> None:
    assert decode_batch([b'{"type":"agent_start"}', OversizedLine(10)]) is None
