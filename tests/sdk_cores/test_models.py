"""Every SDK core changes its model between prompts to one of its ``models`` (the next
request goes to it, the conversation kept) and refuses a model it does not have."""

from __future__ import annotations

from pathlib import Path

import pytest

from rawp_adapters.frames import ModelChangedFrame, ModelListFrame, SessionErrorFrame
from rawp_adapters.testing import drive
from tests.support.core_scenarios import ScriptedCore
from tests.support.llm_openai import MODEL_SAYS, NAME_MODEL, ScriptedOpenAI

pytestmark = pytest.mark.anyio


async def test_the_model_switches_between_prompts_to_a_listed_one_and_refuses_others(
    scripted_core: ScriptedCore, llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    adapter = scripted_core.adapter(llm, models=["fake-model-2"])
    async with drive(adapter, workspace=tmp_path, timeout=60) as d:
        before = await d.prompt(NAME_MODEL)
        await d.send(d.control.list_models())
        listed = await d.wait_for(ModelListFrame)
        await d.send(d.control.set_model("fake-model-2"))
        changed = await d.wait_for(ModelChangedFrame)
        after = await d.prompt(NAME_MODEL)
        await d.send(d.control.set_model("no-such-model"))
        refused = await d.wait_for(SessionErrorFrame)
        still = await d.prompt(NAME_MODEL)
    assert [m.id for m in listed.payload.models] == ["fake-model", "fake-model-2"]
    assert before.text == f"{MODEL_SAYS}fake-model."
    assert changed.payload.model == "fake-model-2"
    assert after.text == f"{MODEL_SAYS}fake-model-2."
    assert refused.payload.error_code == "REJECTED"
    assert still.text == f"{MODEL_SAYS}fake-model-2."
    assert len(llm.requests[-1]["messages"]) > len(llm.requests[0]["messages"]), "kept"
