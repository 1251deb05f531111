"""Adapters that break the contract fail the kit with a message that says what is wrong,
naming the rule and showing the frames around the fault."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from rawp_adapters import AgentFailure, Question, SessionContext, Turn, TurnResult
from rawp_adapters.frames import (
    AgentInfo,
    Features,
    SessionCompacted,
    TextDelta,
    ToolInvokeRequest,
    ToolInvokeResult,
    TurnEnd,
    TurnStart,
)
from rawp_adapters.testing import (
    KIT_HOST_TOOL,
    ConformanceSubject,
    FunctionAdapter,
    Prompts,
    RuleResult,
    TurnFunction,
    check_adapter,
    run_conformance,
    run_rule,
    say,
    select_rules,
    stall,
    use_host_tool,
)

pytestmark = pytest.mark.anyio

TOOLS = Features(adapter_type="function", abort=True, tool_events=True, permission_requests=True)


def subject(function: TurnFunction, *, features: Features | None = None) -> ConformanceSubject:
    return ConformanceSubject(
        lambda: FunctionAdapter(function, abort="cancel", features=features),
        prompts=Prompts(answer="hello", tool="tool", busy="busy"),
        permission_timeout_ms=100,
        timeout=10,
    )


async def rule(subject: ConformanceSubject, rule_id: str) -> RuleResult:
    (chosen,) = select_rules([rule_id])
    return await run_rule(subject, chosen)


async def ends_its_turn_itself(turn: Turn, ctx: SessionContext) -> TurnResult:
    await ctx.emit(TextDelta(turn_id=turn.turn_id, index=0, text="done"))
    await ctx.emit(TurnEnd(turn_id=turn.turn_id, stop_reason="end_turn"))
    return TurnResult()


async def starts_another_turn_while_busy(turn: Turn, ctx: SessionContext) -> TurnResult:
    if turn.text != "busy":
        return await say("hi")(turn, ctx)
    await ctx.emit(TextDelta(turn_id=turn.turn_id, index=0, text="working"))
    await ctx.emit(TurnStart(turn_id="let-through", prompt_id="the-second-prompt"))
    return await stall()(turn, ctx)


async def runs_the_tool_on_a_timeout(turn: Turn, ctx: SessionContext) -> TurnResult:
    if turn.text != "tool":
        return await say("hi")(turn, ctx)
    await ctx.emit(
        ToolInvokeRequest(invocation_id="call-1", tool_name="bash", input={}, turn_id=turn.turn_id)
    )
    outcome = await ctx.interact(
        Question.permission("bash", tool_call_id="call-1", turn_id=turn.turn_id)
    )
    ran = outcome.allowed or outcome.reason == "timeout"  # the bug: silence is consent
    await ctx.emit(
        ToolInvokeResult(
            invocation_id="call-1",
            output_type="text",
            output="ran",
            is_error=not ran,
            turn_id=turn.turn_id,
        )
    )
    return TurnResult()


async def test_an_adapter_that_ends_its_turn_itself_fails_saying_only_the_runtime_may() -> None:
    """The runtime drops the adapter's own turn end (the Master still sees exactly one)
    and says so; the kit fails the adapter for it."""
    result = await rule(subject(ends_its_turn_itself), "one-turn")
    assert result.status == "failed"
    assert "[runtime-owned-frames] the adapter emitted session.turn.end" in result.detail
    assert "only the session runtime emits; dropped" in result.detail
    assert "agent.error" in result.detail.split("\n> ")[1]


async def test_an_adapter_that_starts_a_second_turn_itself_fails_saying_only_the_runtime_may() -> (
    None
):
    result = await rule(subject(starts_another_turn_while_busy), "prompt-in-progress")
    assert result.status == "failed"
    assert "[runtime-owned-frames] the adapter emitted session.turn.start" in result.detail


async def test_an_adapter_whose_permission_timeout_allows_fails_permission_deadline() -> None:
    result = await rule(subject(runs_the_tool_on_a_timeout, features=TOOLS), "permission-deadline")
    assert result.status == "failed"
    assert (
        "[permission-deadline] tool call call-1 ran although its permission timed out: "
        "its tool.invoke.result is not an error (only an explicit allow allows)"
    ) in result.detail
    assert "tool.invoke.result" in result.detail.split("\n> ")[1]


async def test_frames_of_a_feature_the_adapter_denies_fail_honest_features() -> None:
    no_tools = ConformanceSubject(
        lambda: FunctionAdapter(runs_the_tool_on_a_timeout),
        prompts=Prompts(answer="tool"),
        permission_timeout_ms=100,
        timeout=10,
    )
    result = await rule(no_tools, "one-turn")
    assert result.status == "failed"
    assert (
        "[honest-features] tool.invoke.request from an adapter whose capabilities say "
        "tool_events: false"
    ) in result.detail


async def behaves(turn: Turn, ctx: SessionContext) -> TurnResult:
    return await (stall("working") if turn.text == "busy" else say("hi"))(turn, ctx)


async def test_a_well_behaved_function_adapter_passes_and_the_report_counts_skips() -> None:
    report = await check_adapter(subject(behaves))
    assert report.ok, report.format()
    text = report.format()
    assert "PASS  MUST        one-turn" in text
    assert "SKIP  CAPABILITY  compaction: the adapter does not claim context_compaction" in text


async def test_run_conformance_raises_with_the_report_when_a_rule_fails(tmp_path: object) -> None:
    with pytest.raises(
        AssertionError, match=r"(?s)breaks the contract:.*FAIL  MUST        one-turn"
    ):
        await run_conformance(
            lambda: FunctionAdapter(ends_its_turn_itself), workspace=str(tmp_path), timeout=10
        )


def host_tool_subject(
    function: TurnFunction, *, models: list[str] | None = None
) -> ConformanceSubject:
    return ConformanceSubject(
        lambda: FunctionAdapter(function, abort="cancel", host_tools=True, models=models),
        prompts=Prompts(answer="hello", host_tool="host"),
        timeout=10,
    )


async def calls_kit_echo(turn: Turn, ctx: SessionContext) -> TurnResult:
    if turn.text != "host":
        return await say("hi")(turn, ctx)
    return await use_host_tool(KIT_HOST_TOOL["name"], {"message": "hi"})(turn, ctx)


async def test_an_adapter_whose_host_tool_calls_reach_the_master_passes_host_tool_call() -> None:
    result = await rule(host_tool_subject(calls_kit_echo), "host-tool-call")
    assert result.status == "passed", result.detail


async def test_an_adapter_that_claims_host_tools_but_never_calls_the_master_fails() -> None:
    async def answers_itself(turn: Turn, ctx: SessionContext) -> TurnResult:
        return await say("I ran kit_echo myself")(turn, ctx)

    subject = host_tool_subject(answers_itself)
    subject = ConformanceSubject(subject.make_adapter, prompts=subject.prompts, timeout=1)
    result = await rule(subject, "host-tool-call")
    assert result.status == "failed"


async def test_a_model_change_that_is_confirmed_and_an_unknown_one_refused_passes() -> None:
    subject = ConformanceSubject(
        lambda: FunctionAdapter(
            say("hi"), models=["kit/model"], agent_info=AgentInfo(name="f", model="kit/model")
        ),
        timeout=10,
    )
    result = await rule(subject, "model-change")
    assert result.status == "passed", result.detail


async def test_operations_not_claimed_are_each_answered_unsupported() -> None:
    result = await rule(subject(behaves), "unsupported-answered")
    assert result.status == "passed", result.detail
    for operation in ("tool catalog", "model change", "model list", "plan"):
        assert operation in result.detail


def compacting_subject(
    compact: Callable[[str | None, SessionContext], Awaitable[None]],
) -> ConformanceSubject:
    return ConformanceSubject(
        lambda: FunctionAdapter(say("hi"), compact=compact), prompts=Prompts(), timeout=10
    )


async def test_an_agent_with_nothing_to_compact_that_says_so_passes_compaction() -> None:
    async def nothing_to_do(_: str | None, ctx: SessionContext) -> None:
        await ctx.emit(SessionCompacted(trigger="manual", compacted=False))

    result = await rule(compacting_subject(nothing_to_do), "compaction")
    assert result.status == "passed", result.detail
    assert result.detail == "nothing to compact (compacted: false)"


async def test_a_compaction_answered_with_an_agent_error_fails_at_once_saying_so() -> None:
    async def fails(_: str | None, ctx: SessionContext) -> None:
        raise AgentFailure.of("Nothing to compact (session too small)")

    result = await rule(compacting_subject(fails), "compaction")
    assert result.status == "failed"
    assert result.seconds < 5  # not the kit's 10-second wait for session.compacted
    assert (
        "[compaction] a compaction was answered agent.error AGENT_ERROR: "
        "Nothing to compact (session too small)"
    ) in result.detail
