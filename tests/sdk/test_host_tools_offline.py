"""The Master's tools through the SDK adapter without a model: the demo core's scripted
``call host tool`` and :func:`use_host_tool` of :class:`FunctionCore`; the adapter
reports ``host_tools`` only for a core that has them."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from rawp_adapter_sdk import CoreFeatures, SdkAdapter
from rawp_adapter_sdk.cores.demo import DemoCore
from rawp_adapter_sdk.testing import FunctionCore, stall, use_host_tool

from rawp_adapters.frames import (
    Delivery,
    InteractionRequestFrame,
    SessionCapabilitiesFrame,
    SessionErrorFrame,
    ToolCatalogUpdatedFrame,
    ToolInvokeRequestFrame,
    ToolInvokeResultFrame,
)
from rawp_adapters.testing import SessionDriver, deny_all, drive

pytestmark = pytest.mark.anyio

ECHO = {
    "name": "echo",
    "description": "Says the text back.",
    "input_schema": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
}


def files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


async def publish_echo(d: SessionDriver) -> None:
    await d.send(d.control.publish_tools([ECHO]))
    await d.wait_for(ToolCatalogUpdatedFrame)


async def answer_next_call(d: SessionDriver, *, after: int, output: str) -> ToolInvokeRequestFrame:
    request = await d.wait_for(ToolInvokeRequestFrame, after=after)
    await d.send(d.control.tool_stream(request.payload.invocation_id, "working… "))
    await d.send(d.control.tool_result(request.payload.invocation_id, output))
    return request


async def test_the_demo_core_calls_a_published_host_tool_and_says_its_answer(
    tmp_path: Path,
) -> None:
    core = DemoCore(delay_ms=0)
    async with drive(SdkAdapter.for_core(core), workspace=tmp_path) as d:
        await publish_echo(d)
        start = await d.start_prompt('call host tool echo with {"text": "hi"}')
        request = await answer_next_call(d, after=d.frames.index(start), output="hi back")
        turn = await d.wait_turn(start.payload.turn_id)
    assert d.of_type(SessionCapabilitiesFrame)[0].payload.features.host_tools
    assert core.tools == ["echo"]
    assert request.payload.executor == "master"
    assert request.payload.input == {"text": "hi"}
    (asked,) = turn.of_type(InteractionRequestFrame)  # the demo's permission gate
    assert asked.payload.context.tool_call_id == request.payload.invocation_id
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert result.payload.resolution == "answered"
    assert "echo said: working… hi back" in turn.text
    assert files(tmp_path) == []  # no note was written
    assert turn.stop_reason == "end_turn"


@pytest.mark.parametrize(
    ("prompt", "said"),
    [
        ("call host tool echo with {}", "echo failed: invalid input"),
        ("call host tool nope", "echo failed"),
        ("call host tool echo with {not json}", "I could not call echo: its input is not JSON"),
    ],
    ids=["invalid-input", "unknown-tool", "not-json"],
)
async def test_the_demo_core_reports_a_host_call_that_cannot_be_made(
    tmp_path: Path, prompt: str, said: str
) -> None:
    async with drive(SdkAdapter.for_core(DemoCore(delay_ms=0)), workspace=tmp_path) as d:
        await publish_echo(d)
        turn = await d.prompt(prompt)
    expected = said.replace("echo", "nope") if "nope" in prompt else said
    assert expected in turn.text
    assert turn.stop_reason == "end_turn"


async def test_a_host_call_the_master_refuses_permission_for_is_not_asked_of_it(
    tmp_path: Path,
) -> None:
    core = FunctionCore(
        use_host_tool("echo", {"text": "hi"}), features=CoreFeatures(host_tools=True)
    )
    async with drive(SdkAdapter.for_core(core), workspace=tmp_path, policy=deny_all) as d:
        await publish_echo(d)
        turn = await d.prompt("go")
    (request,) = turn.of_type(ToolInvokeRequestFrame)
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert request.payload.executor is None
    assert (result.payload.resolution, result.payload.is_error) == ("denied", True)
    assert turn.text.startswith("error: ")


async def test_a_core_without_host_tools_makes_the_adapter_refuse_a_catalog(
    tmp_path: Path,
) -> None:
    core = FunctionCore()  # it has publish_tools, but its features do not say host_tools
    async with drive(SdkAdapter.for_core(core), workspace=tmp_path) as d:
        await d.send(d.control.publish_tools([ECHO]))
        error = await d.wait_for(SessionErrorFrame)
    assert not d.of_type(SessionCapabilitiesFrame)[0].payload.features.host_tools
    assert error.payload.error_code == "UNSUPPORTED"
    assert core.tools == []


async def test_a_core_that_steers_gets_both_deliveries_in_the_running_prompt(
    tmp_path: Path,
) -> None:
    both = anyio.Event()

    class Steered(FunctionCore):
        async def steer(self, text: str, delivery: Delivery) -> None:
            await super().steer(text, delivery)
            if len(self.steered) == 2:
                both.set()

    features = CoreFeatures(abort=True, steering=True, follow_up=True)
    core = Steered(stall("working"), features=features)
    async with drive(SdkAdapter.for_core(core), workspace=tmp_path) as d:
        start = await d.start_prompt("go")
        await d.send(d.control.steer("also B"))
        await d.send(d.control.follow_up("then C"))
        with anyio.fail_after(10):
            await both.wait()
        await d.send(d.control.abort(start.payload.turn_id))
        await d.wait_turn(start.payload.turn_id)
    caps = d.of_type(SessionCapabilitiesFrame)[0].payload.features
    assert (caps.steering, caps.follow_up) == (True, True)
    assert core.steered == [("also B", "steer"), ("then C", "follow_up")]
