"""HostTools and serve_host: the Master declares tools, publishes them on a session and
answers the agent's calls, one task each, in the loop that answers its questions."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Annotated, Any

import anyio
import pytest
from pydantic import BaseModel, Field

from rawp_adapters import (
    HostToolCall,
    SessionContext,
    SessionOptions,
    Turn,
    TurnResult,
    open_session,
)
from rawp_adapters.frames import (
    InteractionResolvedFrame,
    TextDelta,
    ToolInvokeRequestFrame,
    ToolInvokeResultFrame,
    ToolInvokeStreamFrame,
)
from rawp_adapters.host import (
    CatalogRefused,
    HostTools,
    ToolCall,
    ToolError,
    ToolOutput,
    allow_all,
    deny_all,
    serve_host,
)
from rawp_adapters.testing import FunctionAdapter, use_host_tool
from tests.host.serving import WAIT, serve_prompt

pytestmark = pytest.mark.anyio


def lookup_tools() -> HostTools:
    tools = HostTools()

    @tools.tool(description="Look a word up")
    async def lookup(
        word: Annotated[str, Field(description="The word")], call: ToolCall, limit: int = 2
    ) -> str:
        await call.stream(f"looking up {word}… ")
        return f"{word}: {limit} meanings"

    return tools


async def test_a_tool_declared_from_type_hints_is_published_called_streamed_and_answered(
    tmp_path: Path,
) -> None:
    adapter = FunctionAdapter(use_host_tool("lookup", {"word": "anyio"}), host_tools=True)
    served = await serve_prompt(adapter, tmp_path, lookup_tools())
    assert served.published == ["lookup"]
    [spec] = adapter.tools
    assert spec.description == "Look a word up"
    assert spec.input_schema["required"] == ["word"]
    assert spec.input_schema["properties"]["word"]["description"] == "The word"
    assert "call" not in spec.input_schema["properties"]
    assert spec.input_schema["additionalProperties"] is False
    assert served.text == "looking up anyio… anyio: 2 meanings"
    [stream] = served.of_type(ToolInvokeStreamFrame)
    assert stream.payload.output == "looking up anyio… "
    [result] = served.of_type(ToolInvokeResultFrame)
    assert (result.payload.resolution, result.payload.output) == ("answered", "anyio: 2 meanings")


async def test_an_explicit_schema_hands_the_handler_the_raw_input_and_a_dict_is_structured(
    tmp_path: Path,
) -> None:
    tools = HostTools()
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}

    @tools.tool("double", input_schema=schema)
    async def double_it(call: ToolCall) -> dict[str, int]:
        return {"doubled": call.input["n"] * 2}

    adapter = FunctionAdapter(use_host_tool("double", {"n": 21}), host_tools=True)
    served = await serve_prompt(adapter, tmp_path, tools)
    assert adapter.tools[0].input_schema == schema
    [result] = served.of_type(ToolInvokeResultFrame)
    assert result.payload.output_type == "structured"
    assert result.payload.output == {"doubled": 42}
    assert served.text == '{"doubled": 42}'


class Answer(BaseModel):
    meaning: str


@pytest.mark.parametrize(
    ("returned", "output_type", "output"),
    [
        (None, "empty", None),
        (Answer(meaning="x"), "structured", {"meaning": "x"}),
        (ToolOutput("<b>", "web_content"), "web_content", "<b>"),
    ],
    ids=["none", "model", "tool-output"],
)
async def test_what_a_handler_returns_says_the_results_output_type(
    tmp_path: Path, returned: object, output_type: str, output: Any
) -> None:
    tools = HostTools()

    @tools.tool()
    async def answer() -> object:
        """Answers."""
        return returned

    adapter = FunctionAdapter(use_host_tool("answer", {}), host_tools=True)
    served = await serve_prompt(adapter, tmp_path, tools)
    [result] = served.of_type(ToolInvokeResultFrame)
    assert (result.payload.output_type, result.payload.output) == (output_type, output)
    assert adapter.tools[0].description == "Answers."


def calls_twice(first: str, second: str) -> Any:
    """A turn that calls ``first`` then ``second`` and says both outcomes."""

    async def function(turn: Turn, ctx: SessionContext) -> TurnResult:
        for i, name in enumerate((first, second)):
            outcome = await ctx.call_host_tool(
                HostToolCall(f"c{i}", name, {}, turn_id=turn.turn_id)
            )
            said = f"{name}:{outcome.is_error}:{outcome.text};"
            await ctx.emit(TextDelta(turn_id=turn.turn_id, index=i, text=said))
        return TurnResult()

    return function


async def test_a_failing_handler_answers_with_an_error_result_and_the_loop_goes_on(
    tmp_path: Path,
) -> None:
    tools = HostTools()

    @tools.tool()
    async def refuses() -> str:
        raise ToolError("not today")

    @tools.tool()
    async def crashes() -> str:
        raise KeyError("boom")

    adapter = FunctionAdapter(calls_twice("refuses", "crashes"), host_tools=True)
    served = await serve_prompt(adapter, tmp_path, tools)
    assert served.text == "refuses:True:not today;crashes:True:'boom';"
    results = served.of_type(ToolInvokeResultFrame)
    assert [r.payload.resolution for r in results] == ["answered", "answered"]


@pytest.mark.parametrize("how", ["abort", "deadline"])
async def test_a_call_the_runtime_ends_cancels_its_handler(tmp_path: Path, how: str) -> None:
    tools = HostTools()
    cancelled = anyio.Event()

    @tools.tool()
    async def forever() -> str:
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        raise AssertionError("unreachable")

    async def until_the_handler_stops(turn: Turn, ctx: SessionContext) -> TurnResult:
        outcome = await ctx.call_host_tool(HostToolCall("f1", "forever", {}, turn_id=turn.turn_id))
        await cancelled.wait()  # the turn (and the session) stay until the handler stopped
        assert outcome.is_error
        return TurnResult()

    served = await serve_prompt(
        FunctionAdapter(until_the_handler_stops, host_tools=True),
        tmp_path,
        tools,
        options=SessionOptions(host_tool_timeout_ms=50) if how == "deadline" else None,
        abort_when=ToolInvokeRequestFrame if how == "abort" else None,
    )
    [result] = served.of_type(ToolInvokeResultFrame)
    assert result.payload.resolution == ("cancelled" if how == "abort" else "deadline")


@pytest.mark.parametrize(("policy", "ran"), [(allow_all, True), (deny_all, False)])
async def test_the_same_loop_answers_the_permission_gate_before_the_tool_runs(
    tmp_path: Path, policy: Any, ran: bool
) -> None:
    async def gated(turn: Turn, ctx: SessionContext) -> TurnResult:
        call = HostToolCall("g1", "lookup", {"word": "x"}, turn_id=turn.turn_id, permission=True)
        outcome = await ctx.call_host_tool(call)
        await ctx.emit(TextDelta(turn_id=turn.turn_id, index=0, text=outcome.text))
        return TurnResult()

    served = await serve_prompt(
        FunctionAdapter(gated, host_tools=True), tmp_path, lookup_tools(), policy
    )
    [resolved] = served.of_type(InteractionResolvedFrame)
    assert resolved.payload.outcome == ("allowed" if ran else "denied")
    assert (served.text == "x: 2 meanings") is ran


@pytest.mark.parametrize("host_tools", [False, True])
async def test_tools_the_session_refuses_fail_the_start_of_serving(
    tmp_path: Path, host_tools: bool
) -> None:
    tools = HostTools()

    @tools.tool("bad", input_schema={"type": "string"})
    async def bad(call: ToolCall) -> str:
        return ""

    with anyio.fail_after(WAIT):
        async with (
            open_session(FunctionAdapter(host_tools=host_tools), workspace=tmp_path) as session,
            anyio.create_task_group() as tg,
        ):
            with pytest.raises(CatalogRefused, match=r"host tools|must describe an object"):
                await tg.start(partial(serve_host, session, tools))


def test_a_tool_name_is_declared_once() -> None:
    tools = lookup_tools()

    async def lookup(call: ToolCall) -> str:
        return ""

    with pytest.raises(ValueError, match="declared already"):
        tools.tool()(lookup)
