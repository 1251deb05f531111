"""What a Master sees before any turn: a missing SDK named in one line, options
checked, pydantic-ai's instrumentation (OpenTelemetry, logfire) off."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import structlog
from rawp_adapter_sdk import CoreEnvironment, CoreError, create_core
from rawp_core_pydantic_ai import INSTALL_HINT, PydanticAiCore

from rawp_adapters import InvalidSettingsError
from tests.pydantic_ai.sessions import pydantic_ai_session, sdk_threads
from tests.support.llm_openai import ScriptedOpenAI

pytestmark = pytest.mark.anyio

SDK_MODULES = ("pydantic_ai", "rawp_core_pydantic_ai._agent", "rawp_core_pydantic_ai._turn")


async def test_without_pydantic_ai_the_core_fails_to_start_with_one_line_naming_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for module in SDK_MODULES:
        monkeypatch.setitem(sys.modules, module, None)  # import fails as if not installed
    core = create_core("pydantic-ai", {"model": "fake-model"})
    env = CoreEnvironment(workspace=tmp_path, session_id="s", log=structlog.stdlib.get_logger())
    with pytest.raises(CoreError) as failed:
        await core.start(env)
    assert failed.value.fatal is True
    assert str(failed.value) == INSTALL_HINT
    assert "\n" not in INSTALL_HINT
    assert "pip install rawp-core-pydantic-ai" in INSTALL_HINT


@pytest.mark.parametrize(
    "options",
    [{}, {"model": ""}, {"model": "m", "tools": ["bash"]}, {"model": "m", "max_retries": -1}],
)
def test_bad_options_are_refused_before_anything_starts(options: dict[str, object]) -> None:
    with pytest.raises(InvalidSettingsError):
        create_core("pydantic-ai", options)


def test_the_core_is_registered_as_a_plugin_under_its_name() -> None:
    assert isinstance(create_core("pydantic-ai", {"model": "m"}), PydanticAiCore)


async def test_pydantic_ai_instrumentation_stays_off_and_a_turn_makes_one_model_request(
    llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    from pydantic_ai import Agent

    async with pydantic_ai_session(llm, tmp_path) as d:
        await d.prompt("Say hello.")
    assert Agent._instrument_default is False  # no Agent.instrument_all() anywhere
    assert [r["model"] for r in llm.requests] == ["fake-model"]


async def test_a_core_whose_agent_fails_to_build_stops_its_sdk_thread(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import rawp_core_pydantic_ai._agent as agent_module

    def broken(*args: object) -> None:
        raise RuntimeError("no agent")

    monkeypatch.setattr(agent_module, "SdkAgent", broken)
    before = sdk_threads()
    core = create_core("pydantic-ai", {"model": "fake-model"})
    env = CoreEnvironment(workspace=tmp_path, session_id="s", log=structlog.stdlib.get_logger())
    with pytest.raises(RuntimeError, match="no agent"):
        await core.start(env)
    assert sdk_threads() == before
