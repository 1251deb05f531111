"""The conformance kit over every real ACP agent, offline, through the ACP adapter
(``process`` + ``protocol: acp``), each against its scripted model server.

Each rule opens fresh sessions of its own, so the kit is the slowest part of
``tests/acp``: every agent runs it on one event loop (omp and codex on trio, the
others on asyncio), the scenarios in ``test_real_acp_agents`` run both. opencode and the
Copilot CLI run it once, as ``rawp-adapters check`` with the README's line.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from rawp_adapters import AgentMetadata, create_adapter
from rawp_adapters.testing import ConformanceSubject, Prompts
from rawp_adapters.testing.pytest_plugin import ConformanceTests
from tests.acp.agents import AcpAgentName, acp_available, acp_settings, program_dir, wire_format
from tests.acp.readme_check import assert_readme_check_passes

pytestmark = pytest.mark.acp

TIMEOUT = 90.0
PROMPTS = Prompts(
    answer="THINK_FIRST Say hello.",
    tool="RUN_BASH touch kit.txt",  # codex asks for touch by the rule in tests/acp/agents.py
    busy="SLOW_STREAM 400 50",
)


def subject(name: AcpAgentName, servers: dict[str, str], home: Path) -> ConformanceSubject:
    runs = itertools.count()

    def make_adapter() -> Any:
        settings, _ = acp_settings(
            name,
            llm_url=servers[wire_format(name)],
            home=home / f"run-{next(runs)}",
            interaction_timeout_ms=1000,
        )
        metadata = AgentMetadata(adapter_type="process", settings={"protocol": "acp", **settings})
        return create_adapter(metadata)

    return ConformanceSubject(
        make_adapter, adapter_type="process", prompts=PROMPTS, timeout=TIMEOUT
    )


def installed(name: AcpAgentName) -> pytest.MarkDecorator:
    return pytest.mark.skipif(
        not acp_available(name), reason=f"{name} is not installed: run scripts/install-acp-peers"
    )


class _OnAsyncio:
    @pytest.fixture
    def anyio_backend(self) -> str:
        return "asyncio"


class _OnTrio:
    @pytest.fixture
    def anyio_backend(self) -> str:
        return "trio"


@installed("omp")
class TestOmpAcp(_OnTrio, ConformanceTests):
    @pytest.fixture
    def rawp_subject(self, servers: dict[str, str], tmp_path: Path) -> ConformanceSubject:
        return subject("omp", servers, tmp_path)


@installed("claude")
class TestClaudeAgentAcp(_OnAsyncio, ConformanceTests):
    @pytest.fixture
    def rawp_subject(self, servers: dict[str, str], tmp_path: Path) -> ConformanceSubject:
        return subject("claude", servers, tmp_path)


@installed("qwen")
class TestQwenAcp(_OnAsyncio, ConformanceTests):
    @pytest.fixture
    def rawp_subject(self, servers: dict[str, str], tmp_path: Path) -> ConformanceSubject:
        return subject("qwen", servers, tmp_path)


@installed("codex")
class TestCodexAcp(_OnTrio, ConformanceTests):
    @pytest.fixture
    def rawp_subject(self, servers: dict[str, str], tmp_path: Path) -> ConformanceSubject:
        return subject("codex", servers, tmp_path)


@installed("gemini")
class TestGeminiAcp(_OnAsyncio, ConformanceTests):
    @pytest.fixture
    def rawp_subject(self, servers: dict[str, str], tmp_path: Path) -> ConformanceSubject:
        return subject("gemini", servers, tmp_path)


@pytest.mark.parametrize(
    "name",
    [pytest.param(name, marks=installed(name)) for name in ("opencode", "copilot")],
)
def test_the_readmes_acp_check_of_the_agent_passes_against_the_scripted_model(
    name: AcpAgentName, tmp_path: Path
) -> None:
    """The README's line as printed, the agent on the PATH, in a home of its own."""
    assert_readme_check_passes(name, program_dir(name), tmp_path)
