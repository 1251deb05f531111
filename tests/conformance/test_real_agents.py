"""The conformance kit over the real agents, offline: omp (its host tools included) and
pi through the process adapter against the scripted OpenAI server, and the Claude core
(the real Claude Agent SDK and CLI) through the sdk adapter against the scripted
Anthropic server."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from rawp_adapter_process import ProcessAdapter
from rawp_adapter_sdk import SdkAdapter

from rawp_adapters.testing import KIT_HOST_TOOL, ConformanceSubject, Prompts
from rawp_adapters.testing.pytest_plugin import ConformanceTests
from tests.sdk.claude_sessions import claude_settings
from tests.support.claude import needs_claude_sdk
from tests.support.llm_anthropic import ScriptedAnthropic
from tests.support.llm_openai import CALL_TOOL, ScriptedOpenAI
from tests.support.peers import PeerName, make_peer, peer_available

TIMEOUT = 60.0


@pytest.fixture(scope="module")
def openai_llm() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI() as server:
        yield server


def peer_subject(name: PeerName, llm: ScriptedOpenAI, home: Path) -> ConformanceSubject:
    runs = itertools.count()

    def make_adapter() -> ProcessAdapter:
        peer = make_peer(name, llm_base_url=llm.base_url, home=home / f"run-{next(runs)}")
        return ProcessAdapter.from_settings(
            {
                "command": peer.argv,
                "agent_name": name,
                "env_policy": "allowlist",
                "env_allowlist": [],
                "env": peer.env,
                "interaction_timeout_ms": 1000,
            }
        )

    return ConformanceSubject(
        make_adapter,
        adapter_type="process",
        prompts=Prompts(
            answer="Say hello.",
            tool="RUN_BASH echo hi",
            busy="SLOW_STREAM 200 50",
            host_tool=f"{CALL_TOOL} {KIT_HOST_TOOL['name']} {json.dumps({'message': 'hi'})}",
        ),
        timeout=TIMEOUT,
    )


@pytest.mark.peers
@pytest.mark.skipif(not peer_available("omp"), reason="omp is not installed: scripts/install-peers")
class TestOmp(ConformanceTests):
    @pytest.fixture
    def rawp_subject(self, openai_llm: ScriptedOpenAI, tmp_path: Path) -> ConformanceSubject:
        return peer_subject("omp", openai_llm, tmp_path)


@pytest.mark.peers
@pytest.mark.skipif(not peer_available("pi"), reason="pi is not installed: scripts/install-peers")
class TestPi(ConformanceTests):
    @pytest.fixture
    def rawp_subject(self, openai_llm: ScriptedOpenAI, tmp_path: Path) -> ConformanceSubject:
        return peer_subject("pi", openai_llm, tmp_path)


@pytest.mark.claude
@needs_claude_sdk
class TestClaudeCore(ConformanceTests):
    @pytest.fixture
    def anthropic_api(self) -> Iterator[ScriptedAnthropic]:
        with ScriptedAnthropic() as server:
            yield server

    @pytest.fixture
    def rawp_subject(self, anthropic_api: ScriptedAnthropic, tmp_path: Path) -> ConformanceSubject:
        settings = claude_settings(anthropic_api, tmp_path, timeout_ms=1000)
        return ConformanceSubject(
            lambda: SdkAdapter.from_settings(settings),
            adapter_type="sdk",
            prompts=Prompts(
                answer="THINK_FIRST say hello",
                tool="RUN_BASH echo hi > out.txt",
                busy="SLOW_STREAM",
            ),
            timeout=TIMEOUT,
        )
