"""The openai-agents core through the conformance kit: in process (every MUST rule and
the CAPABILITY rules of what it claims) and with ``rawp-adapters check`` as the README
prints it, against the scripted model."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from rawp_adapters.testing import ConformanceSubject, Prompts
from rawp_adapters.testing.pytest_plugin import ConformanceTests
from tests.openai_agents.conftest import core
from tests.support.llm_openai import ScriptedOpenAI
from tests.support.peers import REPO_ROOT

SCRIPT = Path(sys.executable).parent / "rawp-adapters"
TOOL_PROMPT = 'CALL_TOOL write_file {"path": "kit.txt", "content": "hi"}'
HOST_TOOL_PROMPT = 'CALL_TOOL kit_echo {"message": "hi"}'
BUSY_PROMPT = "SLOW_STREAM 200 50"
PRINTED_URL = "http://127.0.0.1:8000/v1"
"""The base URL the README's command line names (the scripted server's replaces it)."""


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


def readme_check() -> list[str]:
    """The README's ``rawp-adapters check sdk --setting core=openai-agents`` line."""
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    for block in re.findall(r"```sh\n(.*?)```", readme, re.DOTALL):
        for command in block.replace("\\\n", " ").splitlines():
            argv = shlex.split(command)
            if argv[:3] == ["rawp-adapters", "check", "sdk"] and "core=openai-agents" in argv:
                return argv
    raise AssertionError("the README shows no `rawp-adapters check sdk` of core=openai-agents")


def test_the_readmes_check_of_the_openai_agents_core_passes_against_the_scripted_model(
    tmp_path: Path,
) -> None:
    printed = readme_check()
    with ScriptedOpenAI() as llm:
        argv = [arg.replace(PRINTED_URL, llm.base_url) for arg in printed]
        done = subprocess.run(
            [str(SCRIPT), *argv[1:], "--workspace", str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert llm.violations == []
    assert done.returncode == 0, done.stdout + done.stderr
    for rule in ("permission-deadline", "abort-cancels", "unsupported-answered"):
        assert f"PASS  MUST        {rule}" in done.stdout
    for rule in ("permission-request", "tool-events", "host-tool-call", "thinking"):
        assert f"PASS  CAPABILITY  {rule}" in done.stdout
