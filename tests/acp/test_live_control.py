"""Issue 10's operations through the ACP adapter, against the real agents offline: the
agent's plan updates as ``agent.plan.updated``, models listed and switched (the next turn
asks the scripted server for the new model), an unknown model rejected with the session
going on, omp's thinking level, and honest ``UNSUPPORTED`` for what ACP cannot carry
(host tools, steering, follow-up, plan seeding). One session per agent, on one event loop
(omp and codex on trio, the others on asyncio, as the conformance kit runs them).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from rawp_adapters.frames import (
    ModelChangedFrame,
    ModelListFrame,
    PlanUpdatedFrame,
    SessionCapabilitiesFrame,
    SessionErrorFrame,
)
from rawp_adapters.testing import SessionDriver, allow_all, drive
from tests.acp.agents import AcpAgentName, wire_format
from tests.acp.plans import PLAN_STEPS, WRITE_PLAN
from tests.acp.test_real_acp_agents import AGENTS, TIMEOUT, make_adapter
from tests.support._scripted_http import ScriptedServer

pytestmark = [pytest.mark.anyio, pytest.mark.acp]

SECOND_MODEL = {
    "omp": ("fake/second-model", "second-model"),
    "claude": ("sonnet", "sonnet"),
    "codex": ("gpt-5.5", "gpt-5.5"),
    "gemini": ("gemini-2.5-pro", "gemini-2.5-pro"),
    "opencode": ("scripted/fake-model-2", "fake-model-2"),
}
"""A second model each agent offers (qwen-code offers only the one it runs): the id to
switch to, and what the scripted server then sees in the request's model."""

THINKING_LEVEL = {"omp": "auto", "claude": "high"}
"""Agents with a ``thought_level`` config option (claude-agent-acp 0.101: its effort), and a
level to set; the others answer ``UNSUPPORTED``."""

NO_PLAN = {
    "gemini": "gemini-cli 0.61.0 sends no ACP plan update (its write_todos stays a tool call)",
    "qwen": "qwen-code 0.24.4 defers todo_write behind tool_search: not offered to the model",
    "codex": "codex 0.166.0 (codex-acp 2.6.0) no longer offers update_plan to the model",
    "opencode": "opencode 1.18.33 sends no ACP plan update (its todowrite stays a tool call)",
    "copilot": "the Copilot CLI 1.0.102 offers the model no todo tool",
}
"""Agents whose plan updates are not proven: why."""

PLAN_ENV = {"claude": {"CLAUDE_CODE_ENABLE_TODO_TOOLS": "1", "ENABLE_TOOL_SEARCH": "false"}}
"""What an agent needs to offer the model its todo tool at once: claude-agent-acp 0.101.0
offers its task tools (``TaskCreate``…) to its default model (Opus) only with the first
(to an older model chosen at start, Haiku 4.5, without it), and behind its ``ToolSearch``
unless the second says otherwise."""

NO_MODELS = {"copilot"}
"""Agents that advertise no model over ACP (neither a ``model`` config option nor
``models``): listing and setting one is ``UNSUPPORTED``."""


@pytest.fixture
def anyio_backend(name: AcpAgentName) -> str:
    return "trio" if name in ("omp", "codex") else "asyncio"


def asked_models(server: ScriptedServer[Any], token: str) -> set[str]:
    """The models of the requests whose body carries ``token`` (Gemini: from the path)."""
    found = set()
    for request in server.log:
        if request.body is None or token not in json.dumps(request.body):
            continue
        model = request.body.get("model") if isinstance(request.body, dict) else None
        if model is None and "/models/" in request.path:
            model = request.path.split("/models/", 1)[1].split(":", 1)[0]
        found.add(str(model))
    return found


async def hello(d: SessionDriver, server: ScriptedServer[Any]) -> set[str]:
    token = f"T{uuid.uuid4().hex[:12]}"
    turn = await d.prompt(f"Say hello. {token}")
    assert turn.stop_reason == "end_turn"
    return asked_models(server, token)


async def refused(d: SessionDriver, frame: Any) -> str:
    mark = len(d.frames)
    await d.send(frame)
    error = await d.wait_for(SessionErrorFrame, after=mark)
    assert error.payload.fatal is False
    return error.payload.error_code


@pytest.mark.parametrize("name", AGENTS)
async def test_plans_models_and_the_refused_operations_of_each_agent(
    name: AcpAgentName,
    servers: dict[str, str],
    scripted: dict[str, ScriptedServer[Any]],
    tmp_path: Path,
) -> None:
    server = scripted[wire_format(name)]
    adapter, workspace = make_adapter(name, servers, tmp_path, env=PLAN_ENV.get(name))
    async with drive(adapter, workspace=workspace, policy=allow_all, timeout=TIMEOUT) as d:
        if name in NO_MODELS:
            listed = None
            assert await refused(d, d.control.list_models()) == "UNSUPPORTED"
        else:
            await d.send(d.control.list_models())
            listed = await d.wait_for(ModelListFrame)
        before = await hello(d, server)

        planned = None if name in NO_PLAN else await d.prompt(WRITE_PLAN)

        changed = None
        after: set[str] = set()
        if name in SECOND_MODEL:
            await d.send(d.control.set_model(SECOND_MODEL[name][0]))
            changed = await d.wait_for(ModelChangedFrame)
            after = await hello(d, server)

        unknown = await refused(d, d.control.set_model("no-such-model"))
        mark = len(d.frames)
        await d.send(d.control.set_model(thinking_level=THINKING_LEVEL.get(name, "high")))
        thinking = await d.wait_for(
            ModelChangedFrame if name in THINKING_LEVEL else SessionErrorFrame, after=mark
        )
        others = [
            await refused(d, frame)
            for frame in (
                d.control.publish_tools([{"name": "lookup", "description": "x"}]),
                d.control.steer("and also"),
                d.control.follow_up("then"),
                d.control.set_plan([{"content": "seed"}]),
            )
        ]
        last = await hello(d, server)

    (caps,) = d.of_type(SessionCapabilitiesFrame)
    features = caps.payload.features
    assert caps.payload.agent is not None
    current = caps.payload.agent.model
    models = name not in NO_MODELS
    assert (features.model_change, features.model_list, features.plans) == (models, models, True)
    assert features.thinking_change is (name in THINKING_LEVEL)
    assert (features.host_tools, features.steering, features.follow_up) == (False,) * 3
    assert features.plan_seeding is False
    ids = [m.id for m in listed.payload.models] if listed is not None else []
    assert (current in ids) is models

    if planned is not None:
        plans = planned.of_type(PlanUpdatedFrame)
        assert plans, "the agent's todo tool reached the Master as agent.plan.updated"
        assert [e.content for e in plans[-1].payload.entries] == list(PLAN_STEPS)
        assert {f.payload.turn_id for f in plans} == {planned.turn_id}

    if name in SECOND_MODEL:
        target, seen = SECOND_MODEL[name]
        assert target in ids
        assert changed is not None
        assert changed.payload.model == target
        assert not any(seen in m for m in before)
        assert any(seen in m for m in after), after
        assert any(seen in m for m in last), "the rejected change left the model as it was"

    assert unknown == ("REJECTED" if models else "UNSUPPORTED")
    if name in THINKING_LEVEL:
        assert isinstance(thinking, ModelChangedFrame)
        assert thinking.payload.thinking_level == THINKING_LEVEL[name]
    else:
        assert isinstance(thinking, SessionErrorFrame)
        assert thinking.payload.error_code == "UNSUPPORTED"
    assert others == ["UNSUPPORTED"] * 4
