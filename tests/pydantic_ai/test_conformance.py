"""The pydantic-ai core through the conformance kit: in process on asyncio and trio
(every MUST rule and the CAPABILITY rules of what it claims) and with
``rawp-adapters check`` as the README prints it, against the scripted model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from rawp_adapter_sdk import SdkAdapter

from rawp_adapters.testing import ConformanceSubject, Prompts
from rawp_adapters.testing.pytest_plugin import ConformanceTests
from tests.pydantic_ai.sessions import core_settings
from tests.support.core_scenarios import run_readme_check
from tests.support.llm_openai import ScriptedOpenAI

TOOL_PROMPT = "WRITE_FILE kit.txt"
HOST_TOOL_PROMPT = 'CALL_TOOL kit_echo {"message": "hi"}'
BUSY_PROMPT = "SLOW_STREAM"


@pytest.fixture(scope="module")
def kit_llm() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI() as server:
        yield server
    assert server.violations == []


@pytest.fixture
def rawp_subject(kit_llm: ScriptedOpenAI) -> ConformanceSubject:
    settings = core_settings(kit_llm, models=["fake-model", "fake-model-2"])
    return ConformanceSubject(
        make_adapter=lambda: SdkAdapter.from_settings(settings),
        prompts=Prompts(
            answer="THINK_FIRST Say hello.",
            tool=TOOL_PROMPT,
            busy=BUSY_PROMPT,
            host_tool=HOST_TOOL_PROMPT,
        ),
        permission_timeout_ms=300,
    )


class TestPydanticAiCoreConformance(ConformanceTests):
    pass


def test_the_readmes_check_of_the_pydantic_ai_core_passes_against_the_scripted_model(
    tmp_path: Path,
) -> None:
    out = run_readme_check("pydantic-ai", tmp_path)
    for rule in ("permission-request: tool write", "host-tool-call", "thinking", "model-change"):
        assert f"PASS  CAPABILITY  {rule}" in out
    assert "FAIL" not in out
