"""What the openai-agents core tells and takes as a session: its capabilities, a model
switch between prompts, and the one-line error of an SDK that is not installed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from rawp_adapter_sdk import CoreEnvironment, CoreError
from rawp_core_openai_agents import OpenAIAgentsCore

from rawp_adapters.frames import (
    ModelChangedFrame,
    ModelListFrame,
    SessionCapabilitiesFrame,
    SessionErrorFrame,
)
from rawp_adapters.plugins import get_logger
from rawp_adapters.testing import drive
from tests.openai_agents.conftest import core
from tests.support.llm_openai import MODEL_SAYS, NAME_MODEL, ScriptedOpenAI

pytestmark = pytest.mark.anyio


async def test_the_model_switches_between_prompts_and_an_unknown_one_is_refused(
    llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    async with drive(core(llm, models=["fake-model-2"]), workspace=tmp_path) as d:
        before = await d.prompt(NAME_MODEL)
        await d.send(d.control.list_models())
        listed = await d.wait_for(ModelListFrame)
        await d.send(d.control.set_model("fake-model-2"))
        changed = await d.wait_for(ModelChangedFrame)
        after = await d.prompt(NAME_MODEL)
        await d.send(d.control.set_model("no-such-model"))
        refused = await d.wait_for(SessionErrorFrame)
        still = await d.prompt(NAME_MODEL)
    caps = d.of_type(SessionCapabilitiesFrame)[0].payload
    assert caps.agent is not None
    assert (caps.agent.name, caps.agent.version, caps.agent.model) == (
        "openai-agents",
        "0.24.0",
        "fake-model",
    )
    assert [m.id for m in listed.payload.models] == ["fake-model", "fake-model-2"]
    assert before.text == f"{MODEL_SAYS}fake-model."
    assert changed.payload.model == "fake-model-2"
    assert after.text == f"{MODEL_SAYS}fake-model-2."
    assert refused.payload.error_code == "REJECTED"
    assert still.text == f"{MODEL_SAYS}fake-model-2."


async def test_an_sdk_that_is_not_installed_is_one_line_naming_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)
    monkeypatch.setitem(sys.modules, "rawp_core_openai_agents._tools", None)
    env = CoreEnvironment(workspace=tmp_path, session_id="s", log=get_logger("test"))
    with pytest.raises(CoreError) as raised:
        await OpenAIAgentsCore(api_key="k").start(env)
    assert raised.value.fatal
    assert "\n" not in raised.value.message
    assert "pip install rawp-core-openai-agents" in raised.value.message
