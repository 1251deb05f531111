"""The copilot core through the conformance kit in process, on asyncio and trio: every
MUST rule and the CAPABILITY rules of what it claims (thinking, permission, abort, host
tools), and with ``rawp-adapters check`` as the README prints it, against the scripted
model."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from rawp_adapter_sdk import SdkAdapter

from rawp_adapters.testing import ConformanceSubject, Prompts
from rawp_adapters.testing.pytest_plugin import ConformanceTests
from tests.copilot.sessions import core_settings
from tests.support.core_scenarios import run_readme_check
from tests.support.llm_openai import ScriptedOpenAI


@pytest.fixture(scope="module")
def kit_llm() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI() as server:
        yield server
    assert server.violations == []


@pytest.fixture
def rawp_subject(kit_llm: ScriptedOpenAI, copilot_cli: Path) -> ConformanceSubject:
    settings = core_settings(kit_llm, copilot_cli)
    return ConformanceSubject(
        make_adapter=lambda: SdkAdapter.from_settings(settings),
        prompts=Prompts(
            answer="THINK_FIRST Say hello.",
            tool="WRITE_FILE kit.txt",
            busy="SLOW_STREAM",
            host_tool='CALL_TOOL kit_echo {"message": "hi"}',
        ),
        permission_timeout_ms=300,
    )


class TestCopilotCoreConformance(ConformanceTests):
    pass


def test_the_readmes_check_of_the_copilot_core_passes_against_the_scripted_model(
    copilot_cli: Path, tmp_path: Path
) -> None:
    env = os.environ | {"COPILOT_CLI_PATH": str(copilot_cli)}
    out = run_readme_check("copilot", tmp_path, env=env)
    for rule in ("permission-request: tool write", "host-tool-call", "thinking"):
        assert f"PASS  CAPABILITY  {rule}" in out
    assert "FAIL" not in out
