"""pydantic-ai's stream events as core events, without a model: blocks numbered per
turn across model responses, a deferred call started once though pydantic-ai announces
it again on resume, calls of the Master's tools left to the session."""

from __future__ import annotations

from pydantic_ai.messages import (
    FunctionToolCallEvent,
    FunctionToolResultEvent,
    PartDeltaEvent,
    PartEndEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
)
from rawp_adapter_sdk.events import (
    TextChunk,
    TextEnd,
    ThinkingChunk,
    ThinkingEnd,
    ToolFinished,
    ToolStarted,
)
from rawp_core_pydantic_ai._translate import TurnTranslator

WRITE = ToolCallPart("write", '{"path": "a.txt", "content": "hi"}', tool_call_id="call-1")


def test_text_and_thinking_blocks_are_numbered_per_turn_across_model_responses() -> None:
    t = TurnTranslator()
    first = [
        *t.translate(PartStartEvent(index=0, part=ThinkingPart("hm"))),
        *t.translate(PartEndEvent(index=0, part=ThinkingPart("hm"))),
        *t.translate(PartStartEvent(index=1, part=TextPart(""))),
        *t.translate(PartDeltaEvent(index=1, delta=TextPartDelta("I'll"))),
        *t.translate(PartEndEvent(index=1, part=TextPart("I'll"))),
    ]
    second = [  # the next model response numbers its parts from 0 again
        *t.translate(PartStartEvent(index=0, part=TextPart("Done"))),
        *t.translate(PartEndEvent(index=0, part=TextPart("Done"))),
    ]
    assert first == [
        ThinkingChunk(0, "hm"),
        ThinkingEnd(0, "hm"),
        TextChunk(1, "I'll"),
        TextEnd(1, "I'll"),
    ]
    assert second == [TextChunk(2, "Done"), TextEnd(2, "Done")]


def test_a_deferred_call_announced_again_on_resume_is_started_once_and_finished_once() -> None:
    t = TurnTranslator()
    denied = ToolReturnPart("write", "no", tool_call_id="call-1", outcome="denied")
    paused = t.translate(FunctionToolCallEvent(WRITE))
    resumed = [
        *t.translate(FunctionToolCallEvent(WRITE)),
        *t.translate(FunctionToolResultEvent(denied)),
    ]
    assert paused == [ToolStarted("call-1", "write", {"path": "a.txt", "content": "hi"})]
    assert resumed == [ToolFinished("call-1", "no", is_error=True)]
    assert t.finish_open("stopped") == []


def test_calls_of_the_masters_tools_are_left_to_the_session() -> None:
    t = TurnTranslator(host_tools={"echo"})
    call = ToolCallPart("echo", "{}", tool_call_id="call-2")
    assert t.translate(FunctionToolCallEvent(call)) == []
    assert (
        t.translate(FunctionToolResultEvent(ToolReturnPart("echo", "hi", tool_call_id="call-2")))
        == []
    )


def test_a_turn_stopped_before_its_calls_ran_finishes_each_started_call_as_an_error() -> None:
    t = TurnTranslator()
    t.translate(FunctionToolCallEvent(WRITE))
    assert t.finish_open("stopped") == [ToolFinished("call-1", "stopped", is_error=True)]
