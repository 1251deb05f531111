"""The CAPABILITY rules: what an adapter keeps for the features it claims in
``session.capabilities``; skipped (with the reason) for features it does not claim."""

from __future__ import annotations

from typing import Final

from rawp_adapters._frames import (
    AgentErrorFrame,
    Envelope,
    InteractionRequestFrame,
    InteractionResolvedFrame,
    ModelChangedFrame,
    ModelListFrame,
    SessionCapabilitiesFrame,
    SessionCompactedFrame,
    SessionErrorFrame,
    ToolCatalogUpdatedFrame,
    ToolInvokeRequestFrame,
    ToolInvokeResultFrame,
)
from rawp_adapters.host import allow_all, deny_all
from rawp_adapters.testing._outcomes import RuleSkipped, fail
from rawp_adapters.testing._probe import Probe
from rawp_adapters.testing._rules.shared import NO_TOOL, frame_index, needs, tool_refused
from rawp_adapters.testing._session_checks import claimed_features
from rawp_adapters.testing._subject import KIT_HOST_TOOL

_NO_HOST_TOOL = "needs Prompts.host_tool: a prompt that makes its agent call kit_echo"
_CATALOG_ANSWERS: Final = frozenset({"tool.catalog.updated", "session.error"})
_MODEL_ANSWERS: Final = frozenset({"session.model.changed", "session.error"})


async def compaction(p: Probe) -> str:
    async with p.session(claiming="context_compaction") as d:
        await d.prompt(p.prompts.answer)
        mark = len(d.frames)
        await d.send(d.control.compact())
        found = await d.wait_for(Envelope, after=mark, where=_compaction_answer)
    if isinstance(found, AgentErrorFrame):
        fail(
            "compaction",
            f"a compaction was answered agent.error {found.payload.error_code}: "
            f"{found.payload.message} (an agent with nothing to compact answers "
            "session.compacted with compacted: false)",
            d,
            frame_index(d, found),
        )
    if isinstance(found, SessionErrorFrame):
        fail(
            "compaction",
            f"claims context_compaction but a compaction was answered session.error "
            f"{found.payload.error_code}: {found.payload.message}",
            d,
            frame_index(d, found),
        )
    assert isinstance(found, SessionCompactedFrame)  # what _compaction_answer has left
    return "" if found.payload.compacted else "nothing to compact (compacted: false)"


def _compaction_answer(frame: Envelope) -> bool:
    """A manual compaction's answer: done (or nothing to do), refused, or failed."""
    match frame:
        case SessionCompactedFrame():
            return frame.payload.trigger == "manual"
        case AgentErrorFrame():
            return frame.payload.severity != "warning"
        case _:
            return isinstance(frame, SessionErrorFrame)


async def plan_mode(p: Probe) -> str:
    async with p.session(claiming="plan_mode") as d:
        mark = len(d.frames)
        await d.send(d.control.switch_mode("plan"))
        await d.prompt(p.prompts.answer)
        await d.send(d.control.switch_mode("default"))
        await d.prompt(p.prompts.answer)
    for index in range(mark, len(d.frames)):
        frame = d.frames[index]
        if isinstance(frame, SessionErrorFrame):
            fail(
                "plan-mode",
                f"claims plan_mode but a mode switch got session.error {frame.payload.error_code}",
                d,
                index,
            )
    return ""


async def host_tool_call(p: Probe) -> str:
    async with p.session(claiming="host_tools") as d:
        await d.send(d.control.publish_tools([KIT_HOST_TOOL]))
        updated = await d.wait_for(Envelope, where=lambda f: f.type in _CATALOG_ANSWERS)
        if not isinstance(updated, ToolCatalogUpdatedFrame) or updated.payload.tools != [
            "kit_echo"
        ]:
            fail(
                "host-tool-call",
                "publishing kit_echo was not confirmed",
                d,
                frame_index(d, updated),
            )
        prompt = needs(p.prompts.host_tool, _NO_HOST_TOOL)
        start = await d.start_prompt(prompt)
        request = await d.wait_for(
            ToolInvokeRequestFrame, where=lambda f: f.payload.executor == "master"
        )
        invocation_id = request.payload.invocation_id
        await d.send(d.control.tool_stream(invocation_id, "kit progress"))
        await d.send(d.control.tool_result(invocation_id, "kit says hello"))
        turn = await d.wait_turn(start.payload.turn_id)
    results = [
        f for f in turn.of_type(ToolInvokeResultFrame) if f.payload.invocation_id == invocation_id
    ]
    if len(results) != 1 or results[0].payload.resolution != "answered":
        fail("host-tool-call", "the answered host call has no one answered result", d, None)
    if turn.stop_reason != "end_turn":
        fail("host-tool-call", f"the turn ended {turn.stop_reason}", d, frame_index(d, turn.end))
    return ""


async def model_change(p: Probe) -> str:
    async with p.session(claiming="model_change") as d:
        features = claimed_features(d)
        current = d.of_type(SessionCapabilitiesFrame)[0].payload.agent
        model = current.model if current is not None else None
        if model is None and features.model_list:
            await d.send(d.control.list_models())
            listed = await d.wait_for(ModelListFrame)
            model = listed.payload.models[0].id if listed.payload.models else None
        model = needs(model, "names no model (agent.model) and lists none")
        await d.send(d.control.set_model(model))
        changed = await d.wait_for(Envelope, where=lambda f: f.type in _MODEL_ANSWERS)
        if not isinstance(changed, ModelChangedFrame):
            fail("model-change", f"a change to {model!r} was refused", d, frame_index(d, changed))
        mark = len(d.frames)
        await d.send(d.control.set_model("kit/no-such-model"))
        refused = await d.wait_for(Envelope, after=mark, where=lambda f: f.type in _MODEL_ANSWERS)
        if not isinstance(refused, SessionErrorFrame) or refused.payload.fatal:
            fail("model-change", "an unknown model was not refused", d, frame_index(d, refused))
        await d.prompt(p.prompts.answer)
    return model


async def permission_request(p: Probe) -> str:
    tool = needs(p.prompts.tool, NO_TOOL)
    async with p.session(policy=allow_all, claiming="permission_requests") as d:
        allowed = await d.prompt(tool)
        d.policy = deny_all
        denied = await d.prompt(tool)
    for turn, outcome in ((allowed, "allowed"), (denied, "denied")):
        requests = [
            f
            for f in turn.of_type(InteractionRequestFrame)
            if f.payload.interaction_type == "PERMISSION"
        ]
        if not requests:
            fail(
                "permission-request",
                "the tool prompt gave no agent.interaction.request PERMISSION",
                d,
                frame_index(d, turn.end),
            )
        request = requests[0]
        context = request.payload.context
        if context is None or not context.tool_name:
            fail(
                "permission-request",
                "a PERMISSION request does not name its tool in context.tool_name",
                d,
                frame_index(d, request),
            )
        resolved = [
            f
            for f in turn.of_type(InteractionResolvedFrame)
            if f.payload.interaction_id == request.payload.interaction_id
        ]
        if resolved and resolved[0].payload.outcome != outcome:
            fail(
                "permission-request",
                f"a permission the Master {outcome} was resolved {resolved[0].payload.outcome!r}",
                d,
                frame_index(d, resolved[0]),
            )
    tool_refused(
        d,
        denied.frames,
        denied.of_type(InteractionRequestFrame)[0].payload,
        "permission-request",
        "was denied",
    )
    return f"tool {context.tool_name}"


async def tool_events(p: Probe) -> str:
    tool = needs(p.prompts.tool, NO_TOOL)
    async with p.session(policy=allow_all, claiming="tool_events") as d:
        turn = await d.prompt(tool)
    calls = turn.of_type(ToolInvokeRequestFrame)
    if not calls:
        fail(
            "tool-events",
            "the tool prompt gave no tool.invoke.request",
            d,
            frame_index(d, turn.end),
        )
    results = {f.payload.invocation_id for f in turn.of_type(ToolInvokeResultFrame)}
    for call in calls:
        if call.payload.invocation_id not in results:
            fail(
                "tool-events",
                f"tool call {call.payload.invocation_id} got no tool.invoke.result",
                d,
                frame_index(d, call),
            )
    return ", ".join(sorted({c.payload.tool_name for c in calls}))


async def thinking(p: Probe) -> str:
    async with p.session(claiming="thinking") as d:
        turn = await d.prompt(p.prompts.answer)
    deltas: dict[int, str] = {}
    for frame in turn.frames:
        if frame.type == "agent.thinking.delta":
            deltas[frame.payload.index] = deltas.get(frame.payload.index, "") + frame.payload.text
        elif frame.type == "agent.thinking.done":
            streamed = deltas.pop(frame.payload.index, None)
            if (
                streamed is not None
                and not frame.payload.redacted
                and frame.payload.text != streamed
            ):
                fail(
                    "thinking",
                    f"thinking block {frame.payload.index} is done with other text than "
                    "its deltas streamed",
                    d,
                    frame_index(d, frame),
                )
    if not turn.of_type("agent.thinking.done"):
        raise RuleSkipped("the answer prompt made the agent stream no thinking")
    return ""
