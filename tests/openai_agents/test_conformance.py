"""The openai-agents core through the conformance kit: in process (every MUST rule and
the CAPABILITY rules of what it claims) and with ``rawp-adapters check`` as the README
prints it, against the scripted model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rawp_adapters.testing import ConformanceSubject, Prompts
from rawp_adapters.testing.pytest_plugin import ConformanceTests
from tests.openai_agents.conftest import core
from tests.support.core_scenarios import run_readme_check
from tests.support.llm_openai import ScriptedOpenAI

TOOL_PROMPT = 'CALL_TOOL write_file {"path": "kit.txt", "content": "hi"}'
HOST_TOOL_PROMPT = 'CALL_TOOL kit_echo {"message": "hi"}'
BUSY_PROMPT = "SLOW_STREAM 200 50"


@pytest.fixture(scope="module")
def kit_llm() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI() as server:
        yield server
    assert server.violations == []


@pytest.fixture
def rawp_subject(kit_llm: ScriptedOpenAI) -> ConformanceSubject:
    return ConformanceSubject(
        make_adapter=lambda: core(kit_llm, models=["fake-model-2"]),
        prompts=Prompts(
            answer="THINK_FIRST hello",
            tool=TOOL_PROMPT,
            busy=BUSY_PROMPT,
            host_tool=HOST_TOOL_PROMPT,
        ),
        permission_timeout_ms=300,
    )


class TestOpenAIAgentsCoreConformance(ConformanceTests):
    pass


def test_the_readmes_check_of_the_openai_agents_core_passes_against_the_scripted_model(
    tmp_path: Path,
) -> None:
    out = run_readme_check("openai-agents", tmp_path)
    for rule in ("permission-deadline", "abort-cancels", "unsupported-answered"):
        assert f"PASS  MUST        {rule}" in out
    for rule in ("permission-request", "tool-events", "host-tool-call", "thinking"):
        assert f"PASS  CAPABILITY  {rule}" in out
