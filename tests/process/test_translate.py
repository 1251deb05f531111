"""The sans-IO translator: xcsh-family events in, DPS payloads out."""

from __future__ import annotations

import json
from typing import Any

import pytest
from rawp_adapter_process._translate import (
    Output,
    RetriesEnded,
    RunEnded,
    RunStarted,
    Translator,
    new_output,
    output_type_for,
)
from rawp_adapter_process._wire import decode_line

from rawp_adapters.frames import (
    AgentError,
    SessionCompacted,
    TextDelta,
    TextDone,
    ThinkingDelta,
    ThinkingDone,
    ToolInvokeRequest,
    ToolInvokeResult,
    ToolInvokeStream,
)

TURN = "turn-1"


def feed(translator: Translator, *events: dict[str, Any]) -> list[Output]:
    out: list[Output] = []
    for event in events:
        message = decode_line(json.dumps(event).encode())
        assert message is not None, event
        out += translator.feed(message)
    return out


def update(kind: str, index: int = 0, **fields: Any) -> dict[str, Any]:
    event = {"type": kind, "contentIndex": index, "partial": {"huge": "x"}, **fields}
    return {"type": "message_update", "message": {}, "assistantMessageEvent": event}


def message_end(
    stop: str = "stop", usage: tuple[int, int] = (100, 5), **fields: Any
) -> dict[str, Any]:
    message = {
        "role": "assistant",
        "stopReason": stop,
        "usage": {
            "input": usage[0],
            "output": usage[1],
            "cacheRead": 1,
            "cacheWrite": 2,
            "cost": {"total": 0.25},
        },
        **fields,
    }
    return {"type": "message_end", "message": message}


def tool_update(text: str, call_id: str = "c1") -> dict[str, Any]:
    return {
        "type": "tool_execution_update",
        "toolCallId": call_id,
        "toolName": "bash",
        "partialResult": {"content": [{"type": "text", "text": text}], "details": {}},
    }


def tool_start(name: str = "bash", call_id: str = "c1", **args: Any) -> dict[str, Any]:
    return {"type": "tool_execution_start", "toolCallId": call_id, "toolName": name, "args": args}


def tool_end(
    name: str, text: str, *, error: bool = False, details: Any = None, call_id: str = "c1"
) -> dict[str, Any]:
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    if details is not None:
        result["details"] = details
    return {
        "type": "tool_execution_end",
        "toolCallId": call_id,
        "toolName": name,
        "result": result,
        "isError": error,
    }


@pytest.fixture
def translator() -> Translator:
    t = Translator()
    t.begin_turn(TURN)
    return t


def test_text_deltas_and_done_carry_the_turn_and_block_index(translator: Translator) -> None:
    out = feed(
        translator,
        update("text_start"),
        update("text_delta", delta="Hel"),
        update("text_delta", delta="lo"),
        update("text_end", content="Hello"),
    )
    assert out == [
        TextDelta(turn_id=TURN, index=0, text="Hel"),
        TextDelta(turn_id=TURN, index=0, text="lo"),
        TextDone(turn_id=TURN, index=0, text="Hello"),
    ]


def test_blocks_are_numbered_across_the_assistant_messages_of_a_turn(
    translator: Translator,
) -> None:
    first = feed(translator, update("text_delta", delta="a"), update("text_end", content="a"))
    feed(translator, message_end("toolUse"))
    second = feed(translator, update("text_delta", delta="b"), update("text_end", content="b"))
    assert [p.index for p in first + second if isinstance(p, TextDelta | TextDone)] == [
        0,
        0,
        1,
        1,
    ]


def test_interleaved_thinking_and_text_keep_their_own_indexes(translator: Translator) -> None:
    out = feed(
        translator,
        update("thinking_start", 0),
        update("thinking_delta", 0, delta="hmm"),
        update("text_start", 1),
        update("text_delta", 1, delta="Hi"),
        update("thinking_end", 0, content="hmm"),
        update("text_end", 1, content="Hi"),
    )
    assert out == [
        ThinkingDelta(turn_id=TURN, index=0, text="hmm"),
        TextDelta(turn_id=TURN, index=1, text="Hi"),
        ThinkingDone(turn_id=TURN, index=0, text="hmm"),
        TextDone(turn_id=TURN, index=1, text="Hi"),
    ]


def test_empty_deltas_are_not_sent(translator: Translator) -> None:
    assert feed(translator, update("text_delta", delta="")) == []


def test_a_message_cut_short_leaves_its_open_blocks_to_the_runtime(
    translator: Translator,
) -> None:
    """The session runtime closes what a turn left open, for every adapter (see
    tests/core/test_turn_end_closes.py); the translator only translates."""
    feed(translator, update("text_delta", delta="tick "), update("text_delta", delta="tock"))
    out = feed(translator, message_end("aborted", errorMessage="Request was aborted"))
    assert out == []
    assert translator.finish_turn().stop_reason == "cancelled"
    translator.begin_turn("turn-2")
    out = feed(translator, update("text_delta", delta="x"))
    assert out == [TextDelta(turn_id="turn-2", index=0, text="x")], "a new message starts at 0"


def test_usage_is_summed_over_the_turns_assistant_messages(translator: Translator) -> None:
    feed(translator, message_end("toolUse", (100, 6)), message_end("stop", (120, 4)))
    outcome = translator.finish_turn()
    assert outcome.usage is not None
    usage = outcome.usage
    assert (usage.turn_id, usage.input_tokens, usage.output_tokens) == (TURN, 220, 10)
    assert (usage.cache_read_tokens, usage.cache_write_tokens, usage.cost_usd) == (2, 4, 0.5)


@pytest.mark.parametrize(
    ("stop", "expected"),
    [
        ("stop", "end_turn"),
        ("length", "max_tokens"),
        ("error", "error"),
        ("aborted", "cancelled"),
        ("toolUse", "end_turn"),
    ],
)
def test_the_stop_reason_is_the_last_assistant_messages(
    translator: Translator, stop: str, expected: str
) -> None:
    feed(translator, message_end("toolUse"), message_end(stop, errorMessage="boom"))
    outcome = translator.finish_turn()
    assert outcome.stop_reason == expected
    assert outcome.error == ("boom" if expected == "error" else None)


def test_an_aborted_turn_is_cancelled_even_if_the_agent_calls_it_an_error(
    translator: Translator,
) -> None:
    translator.note_abort()
    feed(translator, message_end("error", errorMessage="Request was aborted"))
    outcome = translator.finish_turn()
    assert (outcome.stop_reason, outcome.error) == ("cancelled", None)


def test_a_retried_error_ends_with_the_final_error_after_a_warning(
    translator: Translator,
) -> None:
    out = feed(
        translator,
        message_end("error", errorMessage="529 overloaded"),
        {"type": "agent_end", "messages": []},
        {"type": "auto_retry_start", "attempt": 1, "maxAttempts": 3, "errorMessage": "529"},
        {"type": "agent_start"},
        message_end("error", errorMessage="529 again"),
        {"type": "agent_end", "messages": []},
        {"type": "auto_retry_end", "success": False, "attempt": 3, "finalError": "gave up"},
    )
    warnings = [p for p in out if isinstance(p, AgentError)]
    assert [w.severity for w in warnings] == ["warning"]
    assert "attempt 1/3" in warnings[0].message
    assert translator.finish_turn().error == "gave up"


def pi_failed_run(error: str = "terminated") -> list[dict[str, Any]]:
    """What pi writes when a model call fails: the run ends, then it announces a retry."""
    failed = {"role": "assistant", "stopReason": "error", "errorMessage": error}
    return [
        {"type": "agent_start"},
        update("text_delta", delta="partial"),
        {"type": "message_end", "message": failed},
        {"type": "agent_end", "messages": [failed]},
    ]


def retry_start(attempt: int, delay_ms: float = 300.0) -> dict[str, Any]:
    return {
        "type": "auto_retry_start",
        "attempt": attempt,
        "maxAttempts": 2,
        "delayMs": delay_ms,
        "errorMessage": "terminated",
    }


def test_a_retry_the_agent_waits_for_keeps_the_turn_busy_until_the_retry_runs(
    translator: Translator,
) -> None:
    out = feed(translator, *pi_failed_run(), retry_start(1, delay_ms=2000))
    assert out[-2] == RunEnded(terminal=None)
    (warning,) = [p for p in out if isinstance(p, AgentError)]
    assert (warning.severity, warning.error_code) == ("warning", "AGENT_ERROR")
    assert "retries it in 2 s (attempt 1/2)" in warning.message
    assert "terminated" in warning.message
    assert translator.retry_pending
    assert translator.retry_delay == 2.0
    assert feed(translator, {"type": "agent_start"}) == [RunStarted()]
    assert not translator.retry_pending
    out = feed(
        translator,
        update("text_delta", delta="retried"),
        message_end(),
        {"type": "auto_retry_end", "success": True, "attempt": 1},
        {"type": "agent_end", "messages": []},
    )
    assert RetriesEnded() in out
    assert out[-1] == RunEnded(terminal=None)
    outcome = translator.finish_turn()
    assert (outcome.stop_reason, outcome.error) == ("end_turn", None)


def test_retries_that_give_up_end_the_wait_and_the_turn_with_their_final_error(
    translator: Translator,
) -> None:
    feed(translator, *pi_failed_run(), retry_start(1), *pi_failed_run(), retry_start(2))
    assert translator.retry_pending
    out = feed(
        translator,
        *pi_failed_run("still terminated"),
        {"type": "auto_retry_end", "success": False, "attempt": 2, "finalError": "gave up"},
    )
    assert out[-1] == RetriesEnded()
    assert not translator.retry_pending
    assert translator.finish_turn().error == "gave up"


def test_a_retry_cancelled_before_it_ran_is_no_longer_pending(translator: Translator) -> None:
    feed(translator, *pi_failed_run(), retry_start(1))
    retry_end = {"type": "auto_retry_end", "success": False, "finalError": "Retry cancelled"}
    assert feed(translator, retry_end) == [RetriesEnded()]
    assert not translator.retry_pending


def test_a_failure_before_streaming_is_read_from_agent_end(translator: Translator) -> None:
    out = feed(
        translator,
        {"type": "agent_start"},
        {
            "type": "agent_end",
            "messages": [{"role": "assistant", "stopReason": "error", "errorMessage": "no key"}],
        },
    )
    assert out == [RunStarted(), RunEnded(terminal=None)]
    assert not translator.run_active
    outcome = translator.finish_turn()
    assert (outcome.stop_reason, outcome.error) == ("error", "no key")


@pytest.mark.parametrize("terminal", [True, False, None])
def test_agent_end_says_whether_the_agent_is_idle(
    translator: Translator, terminal: bool | None
) -> None:
    event: dict[str, Any] = {"type": "agent_end", "messages": []}
    if terminal is not None:
        event["isTerminal"] = terminal
    assert feed(translator, event) == [RunEnded(terminal=terminal)]


def test_tool_output_streams_only_what_is_new(translator: Translator) -> None:
    out = feed(
        translator,
        tool_start(command="seq 3"),
        tool_update("1\n"),
        tool_update("1\n2\n"),
        tool_update("1\n2\n"),
        tool_update("1\n2\n3\n"),
        tool_end("bash", "1\n2\n3\n"),
    )
    assert out == [
        ToolInvokeRequest(
            invocation_id="c1", tool_name="bash", input={"command": "seq 3"}, turn_id=TURN
        ),
        ToolInvokeStream(invocation_id="c1", output="1\n", turn_id=TURN),
        ToolInvokeStream(invocation_id="c1", output="2\n", turn_id=TURN),
        ToolInvokeStream(invocation_id="c1", output="3\n", turn_id=TURN),
        ToolInvokeResult(invocation_id="c1", output_type="text", output="1\n2\n3\n", turn_id=TURN),
    ]


@pytest.mark.parametrize(
    ("sent", "current", "new"),
    [
        ("", "abc", "abc"),
        ("abc", "abcdef", "def"),
        ("line 1\nline 2\n", "line 2\nline 3\n", "line 3\n"),
        ("old", "entirely new", "entirely new"),
    ],
    ids=["first", "appended", "tail-window", "replaced"],
)
def test_new_output_of_a_cumulative_or_rewritten_partial_result(
    sent: str, current: str, new: str
) -> None:
    assert new_output(sent, current) == new


@pytest.mark.parametrize(
    ("tool", "output_type"),
    [
        ("bash", "text"),
        ("read", "file_content"),
        ("edit", "diff"),
        ("write", "empty"),
        ("ls", "file_list"),
        ("find", "file_list"),
        ("glob", "file_list"),
        ("grep", "text"),
        ("web_search", "web_content"),
        ("task", "agent_result"),
        ("my_custom_tool", "text"),
    ],
)
def test_output_type_comes_from_the_tool(tool: str, output_type: str) -> None:
    assert output_type_for(tool) == output_type


def test_tool_results_are_rendered_by_their_output_type(translator: Translator) -> None:
    out = feed(
        translator,
        tool_start("edit", "e1", path="a.py"),
        tool_end("edit", "Replaced 1 line", details={"diff": "-a\n+b"}, call_id="e1"),
        tool_start("write", "w1", path="b.txt"),
        tool_end("write", "Wrote 10 bytes", call_id="w1"),
        tool_start("read", "r1", path="c.txt"),
        tool_end("read", "no such file", error=True, call_id="r1"),
    )
    results = [p for p in out if isinstance(p, ToolInvokeResult)]
    assert [(r.output_type, r.output, r.is_error) for r in results] == [
        ("diff", "-a\n+b", False),
        ("empty", None, False),
        ("text", "no such file", True),
    ]


def test_a_tool_call_announced_by_the_model_can_be_claimed_until_it_starts(
    translator: Translator,
) -> None:
    call = {"type": "toolCall", "id": "c9", "name": "bash", "arguments": {"command": "ls"}}
    feed(translator, update("toolcall_end", toolCall=call))
    claimed = translator.claim_announced_tool("bash")
    assert claimed is not None
    assert (claimed.id, claimed.arguments) == ("c9", {"command": "ls"})
    assert translator.claim_announced_tool("bash") is None
    feed(translator, update("toolcall_end", toolCall=call), tool_start(call_id="c9"))
    assert translator.claim_announced_tool("bash") is None


def test_an_announced_call_is_claimed_with_the_arguments_the_tool_runs_with(
    translator: Translator,
) -> None:
    arguments = {"i": "list the files", "command": "ls"}
    call = {"type": "toolCall", "id": "c9", "name": "bash", "arguments": arguments}
    feed(translator, update("toolcall_end", toolCall=call))
    claimed = translator.claim_announced_tool("bash")
    assert claimed is not None
    assert claimed.arguments == {"command": "ls"}, "omp runs it without the model's intent"


@pytest.mark.parametrize(
    "event",
    [
        {
            "type": "auto_compaction_end",
            "action": "context-full",
            "result": {"summary": "S", "tokensBefore": 5000},
            "aborted": False,
            "willRetry": False,
        },
        {
            "type": "compaction_end",
            "reason": "threshold",
            "result": {"summary": "S", "tokensBefore": 5000},
            "aborted": False,
            "willRetry": False,
        },
    ],
    ids=["xcsh-omp", "pi"],
)
def test_an_automatic_compaction_is_reported_even_between_turns(event: dict[str, Any]) -> None:
    assert feed(Translator(), event) == [
        SessionCompacted(trigger="auto", tokens_before=5000, summary="S")
    ]


def test_pis_manual_compaction_event_is_left_to_the_compact_answer() -> None:
    event = {"type": "compaction_end", "reason": "manual", "result": {"summary": "S"}}
    assert feed(Translator(), event) == []


def test_a_failed_automatic_compaction_is_a_warning() -> None:
    event = {"type": "auto_compaction_end", "aborted": False, "errorMessage": "model down"}
    (warning,) = feed(Translator(), event)
    assert isinstance(warning, AgentError)
    assert warning.severity == "warning"
    assert "model down" in warning.message


def test_an_extension_error_is_a_warning(translator: Translator) -> None:
    event = {"type": "extension_error", "extensionPath": "/x.ts", "event": "tool_call",
             "error": "boom"}  # fmt: skip
    (warning,) = feed(translator, event)
    assert isinstance(warning, AgentError)
    assert warning.message == "extension /x.ts failed in tool_call: boom"


def test_stream_events_outside_a_turn_are_dropped() -> None:
    translator = Translator()
    assert (
        feed(
            translator,
            update("text_delta", delta="late"),
            tool_start(command="ls"),
            tool_update("x"),
            tool_end("bash", "x"),
            message_end(),
        )
        == []
    )


def test_a_new_turn_starts_clean(translator: Translator) -> None:
    feed(translator, update("text_delta", delta="a"), message_end("error", errorMessage="x"))
    translator.finish_turn()
    translator.begin_turn("turn-2")
    out = feed(translator, update("text_delta", delta="b"))
    assert out == [TextDelta(turn_id="turn-2", index=0, text="b")]
    assert translator.finish_turn().stop_reason == "end_turn"


def test_a_run_that_outlives_its_aborted_turn_does_not_count_for_the_next(
    translator: Translator,
) -> None:
    feed(translator, {"type": "agent_start"}, update("text_delta", delta="old"))
    translator.begin_turn("turn-2")
    late = feed(
        translator,
        update("text_delta", delta="still old"),
        message_end("aborted", (50, 50)),
        {"type": "agent_end", "isTerminal": True, "messages": []},
    )
    assert late == []
    own = feed(
        translator,
        {"type": "agent_start"},
        update("text_delta", delta="new"),
        update("text_end", content="new"),
        message_end("stop", (1, 2)),
        {"type": "agent_end", "isTerminal": True, "messages": []},
    )
    assert own == [
        RunStarted(),
        TextDelta(turn_id="turn-2", index=0, text="new"),
        TextDone(turn_id="turn-2", index=0, text="new"),
        RunEnded(terminal=True),
    ]
    outcome = translator.finish_turn()
    assert outcome.stop_reason == "end_turn"
    assert outcome.usage is not None
    assert (outcome.usage.input_tokens, outcome.usage.output_tokens) == (1, 2)
