"""Delegation: the Task host tool runs a sub-agent through any adapter, relays its output
with the delegation chain, keeps it within the parent's tools, asks the Master about its
permissions and ends it with the parent's call."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from rawp_adapters import (
    AgentMetadata,
    ClientFrame,
    HostToolCall,
    SessionContext,
    Turn,
    TurnResult,
)
from rawp_adapters.frames import (
    DelegationLink,
    InteractionRequest,
    SessionCapabilitiesFrame,
    TextDelta,
    ToolInvokeResultFrame,
    ToolInvokeStreamFrame,
)
from rawp_adapters.host import (
    DelegatedRequest,
    Delegation,
    HostTools,
    Reply,
    allow_all,
)
from rawp_adapters.testing import (
    FunctionAdapter,
    TurnFunction,
    assert_valid_stream,
    say,
    use_host_tool,
)
from tests.host.serving import Served, serve_prompt
from tests.process.helpers import fake_agent_processes, fake_command

pytestmark = pytest.mark.anyio

DEMO = AgentMetadata(adapter_type="sdk", settings={"core": "demo", "core_options": {"delay_ms": 0}})


def task(prompt: str, **extra: Any) -> TurnFunction:
    """A parent turn that calls ``Task`` once (call id ``host-1``)."""
    return use_host_tool("Task", {"description": "a sub-task", "prompt": prompt, **extra})


class Children:
    """Every frame of every sub-agent, as Delegation.on_frame sees them."""

    def __init__(self) -> None:
        self.frames: list[ClientFrame] = []

    def __call__(self, frame: ClientFrame) -> None:
        self.frames.append(frame)

    @property
    def sessions(self) -> dict[str, list[ClientFrame]]:
        by_session: dict[str, list[ClientFrame]] = defaultdict(list)
        for frame in self.frames:
            by_session[frame.session_id].append(frame)
        for frames in by_session.values():
            assert_valid_stream(frames)
        return dict(by_session)


def tools_with(delegation: Delegation) -> HostTools:
    return HostTools([delegation])


def the_chain(served: Served) -> list[DelegationLink]:
    session_id = served.of_type(SessionCapabilitiesFrame)[0].session_id
    return [DelegationLink(agent_id=session_id, invocation_id="host-1")]


async def test_the_sub_agents_output_is_relayed_with_the_chain_and_its_text_is_the_result(
    tmp_path: Path,
) -> None:
    children = Children()
    delegation = Delegation(lambda: FunctionAdapter(say("Hel", "lo")), on_frame=children)
    parent = FunctionAdapter(task("greet"), host_tools=True)
    served = await serve_prompt(parent, tmp_path, tools_with(delegation))
    chain = the_chain(served)
    stream = served.of_type(ToolInvokeStreamFrame)
    assert [f.payload.output for f in stream] == ["Hel", "lo"]
    assert all(f.metadata and f.metadata.delegation_chain == chain for f in stream)
    [result] = served.of_type(ToolInvokeResultFrame)
    assert (result.payload.output_type, result.payload.output) == ("agent_result", "Hello")
    assert result.metadata is not None
    assert result.metadata.delegation_chain == chain
    assert served.text == "HelloHello", "the parent agent got the progress, then the result"
    [child] = children.sessions.values()
    assert all(f.metadata and f.metadata.delegation_chain == chain for f in child)
    assert delegation.running == 0


async def test_in_result_mode_the_sub_agent_is_reported_once_as_an_agent_result(
    tmp_path: Path,
) -> None:
    delegation = Delegation(lambda: FunctionAdapter(say("Hel", "lo")), relay="result")
    served = await serve_prompt(
        FunctionAdapter(task("greet"), host_tools=True), tmp_path, tools_with(delegation)
    )
    assert served.of_type(ToolInvokeStreamFrame) == []
    [result] = served.of_type(ToolInvokeResultFrame)
    assert (result.payload.output_type, result.payload.output) == ("agent_result", "Hello")


class Asked:
    """A policy that records what it was asked and answers with ``reply``."""

    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.requests: list[InteractionRequest] = []

    def __call__(self, request: InteractionRequest) -> Reply:
        self.requests.append(request)
        return self.reply


@pytest.mark.parametrize(("reply", "written"), [(Reply.allow(), True), (Reply.deny(), False)])
async def test_a_sub_agents_permission_request_reaches_the_masters_policy_with_the_chain(
    tmp_path: Path, reply: Reply, written: bool
) -> None:
    policy = Asked(reply)
    delegation = Delegation(DEMO)  # the SDK adapter's demo core, found by adapter_type
    served = await serve_prompt(
        FunctionAdapter(task("note it in notes.txt"), host_tools=True),
        tmp_path,
        tools_with(delegation),
        policy,
    )
    [request] = policy.requests
    assert isinstance(request, DelegatedRequest)
    assert request.context.tool_name == "write_file"
    assert request.delegation_chain == the_chain(served)
    assert (tmp_path / "notes.txt").exists() is written
    [result] = served.of_type(ToolInvokeResultFrame)
    expected = "Done. Wrote" if written else "I did not write the file"
    assert result.payload.output.startswith(expected)


async def test_a_sub_agent_gets_the_parents_tools_and_other_permissions_are_denied_unasked(
    tmp_path: Path,
) -> None:
    policy = Asked(Reply.allow())
    delegation = Delegation(DEMO, allowed_tools=["read"])
    served = await serve_prompt(
        FunctionAdapter(task("note it in notes.txt"), host_tools=True),
        tmp_path,
        tools_with(delegation),
        policy,
    )
    assert policy.requests == [], "write_file is not the parent's: denied by the delegation"
    assert not (tmp_path / "notes.txt").exists()
    [result] = served.of_type(ToolInvokeResultFrame)
    assert result.payload.output.startswith("I did not write the file")


async def test_a_sub_agent_may_be_given_fewer_tools_than_the_parent(tmp_path: Path) -> None:
    policy = Asked(Reply.allow())
    delegation = Delegation(DEMO, allowed_tools=["read", "write_file"])
    await serve_prompt(
        FunctionAdapter(task("note it in notes.txt", allowed_tools=["read"]), host_tools=True),
        tmp_path,
        tools_with(delegation),
        policy,
    )
    assert policy.requests == []
    assert not (tmp_path / "notes.txt").exists()


async def test_asking_for_a_tool_the_parent_may_not_use_is_refused_before_any_sub_agent(
    tmp_path: Path,
) -> None:
    started: list[FunctionAdapter] = []

    def child() -> FunctionAdapter:
        started.append(FunctionAdapter())
        return started[-1]

    delegation = Delegation(child, allowed_tools=["read"])
    served = await serve_prompt(
        FunctionAdapter(task("x", allowed_tools=["read", "bash"]), host_tools=True),
        tmp_path,
        tools_with(delegation),
    )
    [result] = served.of_type(ToolInvokeResultFrame)
    assert result.payload.is_error
    assert "may not use bash" in result.payload.output
    assert started == []


async def test_the_sub_agents_model_is_set_before_its_prompt_and_an_unknown_one_refused(
    tmp_path: Path,
) -> None:
    children: list[FunctionAdapter] = []

    def child() -> FunctionAdapter:
        children.append(FunctionAdapter(models=["second"]))
        return children[-1]

    delegation = Delegation(child)
    for model, ok in (("second", True), ("nope", False)):
        served = await serve_prompt(
            FunctionAdapter(task("hi", model=model), host_tools=True),
            tmp_path,
            tools_with(delegation),
        )
        [result] = served.of_type(ToolInvokeResultFrame)
        assert result.payload.is_error is not ok
        assert len(children[-1].prompts) == int(ok)


def nested(prompt: str) -> TurnFunction:
    """A sub-agent that delegates ``prompt`` once more and says the outcome."""

    async def function(turn: Turn, ctx: SessionContext) -> TurnResult:
        call = HostToolCall(
            "inner-1", "Task", {"description": "deeper", "prompt": prompt}, turn_id=turn.turn_id
        )
        outcome = await ctx.call_host_tool(call)
        said = f"{outcome.resolution}:{outcome.text}"
        await ctx.emit(TextDelta(turn_id=turn.turn_id, index=0, text=said))
        return TurnResult()

    return function


@pytest.mark.parametrize("max_depth", [1, 2])
async def test_nested_delegation_extends_the_chain_up_to_the_depth_limit(
    tmp_path: Path, max_depth: int
) -> None:
    agents: list[Callable[[], FunctionAdapter]] = [
        lambda: FunctionAdapter(nested("deep"), host_tools=True),
        lambda: FunctionAdapter(say("from ", "below")),
    ]

    def next_agent() -> FunctionAdapter:
        return agents.pop(0)()

    children = Children()
    delegation = Delegation(next_agent, max_depth=max_depth, on_frame=children)
    served = await serve_prompt(
        FunctionAdapter(task("delegate"), host_tools=True), tmp_path, tools_with(delegation)
    )
    [result] = served.of_type(ToolInvokeResultFrame)
    sessions = list(children.sessions.values())
    if max_depth == 1:
        assert len(sessions) == 1
        assert result.payload.output.startswith("unknown_tool:"), "Task is not offered below"
        return
    assert result.payload.output == "answered:from below"
    child, grandchild = sessions
    deep = [f for f in served.of_type(ToolInvokeStreamFrame) if f.payload.output == "below"]
    assert deep, "the grandchild's output reaches the Master's stream"
    chain = deep[0].metadata.delegation_chain if deep[0].metadata else None
    assert chain == [
        *the_chain(served),
        DelegationLink(agent_id=child[0].session_id, invocation_id="inner-1"),
    ]
    assert all(f.metadata and f.metadata.delegation_chain == chain for f in grandchild)


async def test_sub_agents_over_the_concurrency_limit_are_refused_at_once(tmp_path: Path) -> None:
    running = anyio.Event()
    release = anyio.Event()

    async def first_child(turn: Turn, ctx: SessionContext) -> TurnResult:
        running.set()
        await release.wait()
        return await say("first")(turn, ctx)

    async def two_tasks(turn: Turn, ctx: SessionContext) -> TurnResult:
        said: list[str] = []

        async def delegate(call_id: str) -> None:
            call = HostToolCall(
                call_id, "Task", {"description": "d", "prompt": "p"}, turn_id=turn.turn_id
            )
            outcome = await ctx.call_host_tool(call)
            said.append(f"{call_id}:{outcome.is_error}:{outcome.text}")
            release.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(delegate, "a")
            await running.wait()
            await delegate("b")
        await ctx.emit(TextDelta(turn_id=turn.turn_id, index=0, text="|".join(said)))
        return TurnResult()

    delegation = Delegation(lambda: FunctionAdapter(first_child), max_concurrent=1)
    served = await serve_prompt(
        FunctionAdapter(two_tasks, host_tools=True), tmp_path, tools_with(delegation)
    )
    assert served.text == (
        "b:True:1 sub-agents are running, the limit; try again when one has finished|a:False:first"
    )


def hanging_process_child() -> AgentMetadata:
    """The process adapter on the fake RPC agent (found by adapter_type)."""
    return AgentMetadata(
        adapter_type="process", settings={"command": fake_command(), "agent_name": "fake"}
    )


@pytest.mark.parametrize("how", ["abort", "end"])
async def test_ending_the_parents_call_ends_the_sub_agent_and_its_process(
    tmp_path: Path, how: str
) -> None:
    children = Children()
    delegation = Delegation(hanging_process_child(), on_frame=children)
    served = await serve_prompt(
        FunctionAdapter(task("HANG"), host_tools=True, abort="notify"),
        tmp_path,
        tools_with(delegation),
        allow_all,
        abort_when=ToolInvokeStreamFrame if how == "abort" else None,
        end_when=ToolInvokeStreamFrame if how == "end" else None,
    )
    [result] = served.of_type(ToolInvokeResultFrame)
    assert result.payload.resolution == ("cancelled" if how == "abort" else "session_end")
    [child] = children.sessions.values()
    assert child[-1].type == "session.closed"
    assert fake_agent_processes() == []
    assert delegation.running == 0


async def test_a_sub_agent_that_cannot_start_is_an_error_result(tmp_path: Path) -> None:
    missing = AgentMetadata(adapter_type="process", settings={"command": [str(tmp_path / "no")]})
    served = await serve_prompt(
        FunctionAdapter(task("hi"), host_tools=True), tmp_path, tools_with(Delegation(missing))
    )
    [result] = served.of_type(ToolInvokeResultFrame)
    assert result.payload.is_error
    assert "ended before it answered" in result.payload.output
