"""Sans-IO translation: core events → DPS payloads, and Claude SDK messages → core events."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest
from rawp_adapter_sdk import Compaction, CoreError
from rawp_adapter_sdk._translate import TurnTranslator
from rawp_adapter_sdk.events import (
    Stopped,
    TextChunk,
    TextEnd,
    ThinkingChunk,
    ThinkingEnd,
    ToolFinished,
    ToolProgress,
    ToolStarted,
    UsageReport,
)

from rawp_adapters.frames import (
    SessionUsage,
    ThinkingDelta,
    ToolInvokeRequest,
    ToolInvokeResult,
    ToolInvokeStream,
)


def test_each_event_becomes_its_payload_with_the_turn_id() -> None:
    t = TurnTranslator("turn-1")
    events = (
        ThinkingChunk(0, "hm", redacted=True),
        ThinkingEnd(0, "hm", redacted=True),
        TextChunk(1, "Hi"),
        TextEnd(1, "Hi"),
        ToolStarted("call-1", "Bash", {"command": "ls"}),
        ToolProgress("call-1", "a\n"),
        ToolFinished("call-1", {"files": ["a"]}, output_type="structured"),
    )
    payloads = [p for event in events if (p := t.translate(event)) is not None]
    assert [type(p).__name__ for p in payloads] == [
        "ThinkingDelta",
        "ThinkingDone",
        "TextDelta",
        "TextDone",
        "ToolInvokeRequest",
        "ToolInvokeStream",
        "ToolInvokeResult",
    ]
    assert all(getattr(p, "turn_id", None) == "turn-1" for p in payloads)
    assert payloads[0] == ThinkingDelta(turn_id="turn-1", index=0, text="hm", redacted=True)
    assert payloads[4] == ToolInvokeRequest(
        invocation_id="call-1", tool_name="Bash", input={"command": "ls"}, turn_id="turn-1"
    )
    assert payloads[5] == ToolInvokeStream(invocation_id="call-1", output="a\n", turn_id="turn-1")
    result = payloads[6]
    assert isinstance(result, ToolInvokeResult)
    assert (result.output_type, result.output, result.is_error) == (
        "structured",
        {"files": ["a"]},
        False,
    )


def test_a_usage_step_becomes_one_usage_payload_for_the_runtime_to_sum() -> None:
    t = TurnTranslator("turn-1")
    step = t.translate(UsageReport(input_tokens=10, output_tokens=2, cost_usd=0.5))
    assert step == SessionUsage(turn_id="turn-1", input_tokens=10, output_tokens=2, cost_usd=0.5)


def test_the_stop_reason_is_end_turn_unless_the_core_says_otherwise() -> None:
    t = TurnTranslator("turn-1")
    before = t.stop_reason
    assert t.translate(Stopped("max_tokens")) is None
    assert (before, t.stop_reason) == ("end_turn", "max_tokens")


# ------------------------------------------------------------------ Claude stream

claude = pytest.mark.skipif(
    importlib.util.find_spec("claude_agent_sdk") is None,
    reason="claude-agent-sdk is not installed (pip install 'rawp-adapter-sdk[claude]')",
)


def stream(*events: dict[str, Any], parent: str | None = None) -> list[Any]:
    from claude_agent_sdk.types import StreamEvent

    return [
        StreamEvent(uuid=str(i), session_id="s", event=e, parent_tool_use_id=parent)
        for i, e in enumerate(events)
    ]


def api_message(
    message_id: str, *blocks: tuple[str, list[str]], stop: str = "end_turn"
) -> list[Any]:
    """The partial stream of one model call: (kind, deltas) per block."""
    events: list[dict[str, Any]] = [{"type": "message_start", "message": {"id": message_id}}]
    for index, (kind, deltas) in enumerate(blocks):
        events.append(
            {"type": "content_block_start", "index": index, "content_block": {"type": kind}}
        )
        key, delta_type = (
            ("thinking", "thinking_delta") if kind == "thinking" else ("text", "text_delta")
        )
        for delta in deltas:
            events.append(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": delta_type, key: delta},
                }
            )
        events.append({"type": "content_block_stop", "index": index})
    events.append({"type": "message_delta", "delta": {"stop_reason": stop}})
    return stream(*events)


def result(**fields: Any) -> Any:
    from claude_agent_sdk import ResultMessage

    base: dict[str, Any] = {
        "subtype": "success",
        "duration_ms": 1,
        "duration_api_ms": 1,
        "is_error": False,
        "num_turns": 1,
        "session_id": "s",
    }
    return ResultMessage(**{**base, **fields})


def feed_all(translator: Any, messages: list[Any]) -> list[Any]:
    return [event for message in messages for event in translator.feed(message)]


@claude
def test_claude_blocks_get_turn_wide_indexes_across_model_calls() -> None:
    from rawp_adapter_sdk.cores._claude_stream import ClaudeTurnTranslator

    t = ClaudeTurnTranslator(None)
    events = feed_all(
        t,
        api_message("m1", ("thinking", ["Let ", "me"]), ("text", ["Hi"])),
    ) + feed_all(t, api_message("m2", ("text", ["Bye"])))
    assert events == [
        ThinkingChunk(0, "Let "),
        ThinkingChunk(0, "me"),
        ThinkingEnd(0, "Let me"),
        TextChunk(1, "Hi"),
        TextEnd(1, "Hi"),
        TextChunk(2, "Bye"),
        TextEnd(2, "Bye"),
    ]


@claude
def test_claude_tool_use_and_results_become_tool_calls_and_streamed_text_is_not_repeated() -> None:
    from claude_agent_sdk import (
        AssistantMessage,
        TextBlock,
        ToolResultBlock,
        ToolUseBlock,
        UserMessage,
    )
    from rawp_adapter_sdk.cores._claude_stream import ClaudeTurnTranslator

    t = ClaudeTurnTranslator(None)
    feed_all(t, api_message("m1", ("text", ["x"]), stop="tool_use"))
    said = AssistantMessage(content=[TextBlock("x")], model="m", message_id="m1")
    call = AssistantMessage(
        content=[ToolUseBlock(id="toolu_1", name="Bash", input={"command": "ls"})],
        model="m",
        message_id="m1",
    )
    answer = UserMessage(
        content=[ToolResultBlock(tool_use_id="toolu_1", content=[{"type": "text", "text": "a"}])]
    )
    denied = UserMessage(content=[ToolResultBlock(tool_use_id="toolu_2", is_error=True)])
    assert feed_all(t, [said, call, answer, denied]) == [
        ToolStarted("toolu_1", "Bash", {"command": "ls"}),
        ToolFinished("toolu_1", "a", is_error=False, output_type="text"),
        ToolFinished("toolu_2", "", is_error=True, output_type="empty"),
    ]


@claude
def test_claude_messages_that_were_not_streamed_still_give_their_text() -> None:
    from claude_agent_sdk import AssistantMessage, TextBlock
    from rawp_adapter_sdk.cores._claude_stream import ClaudeTurnTranslator

    t = ClaudeTurnTranslator(None)
    message = AssistantMessage(content=[TextBlock("whole")], model="m", message_id="m9")
    assert t.feed(message) == [TextChunk(0, "whole"), TextEnd(0, "whole")]


@claude
def test_claude_sub_agent_text_is_left_out() -> None:
    from rawp_adapter_sdk.cores._claude_stream import ClaudeTurnTranslator

    t = ClaudeTurnTranslator(None)
    events = stream(
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "x"}},
        parent="toolu_agent",
    )
    assert feed_all(t, events) == []


@claude
def test_a_claude_result_gives_the_turns_usage_and_cost_and_its_stop_reason() -> None:
    from rawp_adapter_sdk.cores._claude_stream import ClaudeTurnTranslator

    t = ClaudeTurnTranslator(session_cost_before=0.25)
    usage = {
        "input_tokens": 20,
        "output_tokens": 5,
        "cache_read_input_tokens": 3,
        "cache_creation_input_tokens": 4,
    }
    events = t.feed(result(usage=usage, total_cost_usd=0.75, stop_reason="max_tokens"))
    assert events == [
        UsageReport(
            input_tokens=20,
            output_tokens=5,
            cache_read_tokens=3,
            cache_write_tokens=4,
            cost_usd=0.5,
        ),
        Stopped("max_tokens"),
    ]
    assert t.finished
    assert t.error is None


@claude
def test_a_claude_api_error_reported_as_success_with_is_error_is_a_failure() -> None:
    from claude_agent_sdk import AssistantMessage, TextBlock
    from rawp_adapter_sdk.cores._claude_stream import ClaudeTurnTranslator

    t = ClaudeTurnTranslator(None)
    synthetic = AssistantMessage(
        content=[TextBlock("API Error: 500 boom")], model="<synthetic>", error="server_error"
    )
    assert t.feed(synthetic) == []
    assert t.feed(result(is_error=True, api_error_status=500, result="API Error: 500 boom")) == []
    assert isinstance(t.error, CoreError)
    assert t.error.message == "API Error: 500 boom"


@claude
@pytest.mark.parametrize(
    ("fields", "cancel_requested"),
    [
        (
            {
                "subtype": "error_during_execution",
                "is_error": True,
                "terminal_reason": "aborted_tools",
            },
            False,
        ),
        (
            {
                "subtype": "error_during_execution",
                "is_error": True,
                "terminal_reason": "aborted_streaming",
            },
            False,
        ),
        ({"subtype": "error_during_execution", "is_error": True}, True),
    ],
)
def test_an_interrupted_claude_turn_stops_as_cancelled(
    fields: dict[str, Any], cancel_requested: bool
) -> None:
    from rawp_adapter_sdk.cores._claude_stream import ClaudeTurnTranslator

    t = ClaudeTurnTranslator(None)
    t.cancel_requested = cancel_requested
    assert t.feed(result(**fields)) == [Stopped("cancelled")]
    assert t.error is None


@claude
def test_a_claude_turn_that_hit_max_turns_is_a_failure_that_says_so() -> None:
    from rawp_adapter_sdk.cores._claude_stream import ClaudeTurnTranslator

    t = ClaudeTurnTranslator(None)
    t.feed(result(subtype="error_max_turns", is_error=True))
    assert t.error is not None
    assert "max_turns" in t.error.message


def compaction_messages(opening: str) -> list[Any]:
    """What the CLI sends for a /compact that happened, opening the new conversation with
    ``opening``."""
    from claude_agent_sdk import SystemMessage, UserMessage

    boundary = {"trigger": "manual", "pre_tokens": 1234, "post_tokens": 80}
    return [
        SystemMessage(subtype="status", data={"status": "compacting"}),
        SystemMessage(subtype="compact_boundary", data={"compact_metadata": boundary}),
        UserMessage(content=opening),
        UserMessage(content="<local-command-stdout>Compacted </local-command-stdout>"),
        result(num_turns=0),
    ]


@claude
@pytest.mark.parametrize(
    ("opening", "summary"),
    [
        (
            "This session is being continued from a previous conversation.\n\n"
            "<system-reminder>\nx\n</system-reminder>\nSummary:\n1. We said hi.\n2. Done.\n\n"
            "If you need specific details from before compaction, read the transcript.",
            "1. We said hi.\n2. Done.",
        ),
        # Worded otherwise (another CLI version): all of it, without reminders.
        ("<system-reminder>x</system-reminder>\nWe said hi.", "We said hi."),
    ],
    ids=["cli-wording", "other-wording"],
)
def test_a_claude_compaction_gives_the_context_size_before_and_the_models_summary(
    opening: str, summary: str
) -> None:
    from rawp_adapter_sdk.cores._claude_stream import ClaudeCompaction

    compaction = ClaudeCompaction()
    for message in compaction_messages(opening):
        compaction.feed(message)
    assert compaction.outcome() == Compaction(tokens_before=1234, summary=summary)


@claude
def test_a_claude_compaction_that_failed_is_a_failure_with_the_clis_reason() -> None:
    from claude_agent_sdk import SystemMessage
    from rawp_adapter_sdk.cores._claude_stream import ClaudeCompaction

    failed = ClaudeCompaction()
    reason = "Compaction failed · attached media exceeds size limits"
    failed.feed(SystemMessage(subtype="status", data={"compact_error": reason}))
    failed.feed(result(num_turns=0))
    with pytest.raises(CoreError, match="attached media exceeds size limits"):
        failed.outcome()


@claude
def test_a_claude_compaction_with_nothing_to_compact_compacted_nothing_and_did_not_fail() -> None:
    from claude_agent_sdk import AssistantMessage, SystemMessage, TextBlock
    from rawp_adapter_sdk.cores._claude_stream import ClaudeCompaction

    said, empty = ClaudeCompaction(), ClaudeCompaction()
    text = TextBlock(text="Error: No messages to compact")
    said.feed(AssistantMessage(content=[text], model="<synthetic>"))
    said.feed(result(num_turns=0))
    error = {"compact_error": "Not enough messages to compact."}
    empty.feed(SystemMessage(subtype="status", data=error))
    empty.feed(result(num_turns=0))
    assert said.outcome() == empty.outcome() == Compaction(compacted=False)
