"""The codex adapter through the conformance kit in process, on asyncio and trio (every
MUST rule and the CAPABILITY rules of what it claims), and with ``rawp-adapters check``
as the README prints it, against the scripted Responses server and the real app-server."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rawp_adapters import AgentMetadata, create_adapter
from rawp_adapters.testing import ConformanceSubject, Prompts
from rawp_adapters.testing.pytest_plugin import ConformanceTests
from tests.codex.agent import KEY_VAR, codex_settings
from tests.support.llm_responses import ScriptedResponses
from tests.support.readme_checks import PRINTED_URL, readme_check, run_check

PROMPTS = Prompts(
    answer="THINK_FIRST Say hello.", tool="RUN_BASH touch kit.txt", busy="SLOW_STREAM 200 50"
)


@pytest.fixture
def rawp_subject(codex_bin: Path, llm: ScriptedResponses, tmp_path: Path) -> ConformanceSubject:
    settings = codex_settings(codex_bin, llm, tmp_path / "home")
    return ConformanceSubject(
        make_adapter=lambda: create_adapter(
            AgentMetadata(adapter_type="process", settings=settings)
        ),
        prompts=PROMPTS,
        permission_timeout_ms=300,
    )


@pytest.mark.codex
class TestCodexConformance(ConformanceTests):
    pass


@pytest.mark.codex
def test_the_readmes_check_of_the_codex_app_server_passes_against_the_scripted_model(
    codex_bin: Path, llm: ScriptedResponses, tmp_path: Path
) -> None:
    """As printed, with ``codex`` on the PATH (the pinned binary) and the provider's key
    in the environment, as a user would have them."""
    printed = readme_check("process", protocol="codex")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "codex").symlink_to(codex_bin)
    env = os.environ | {"PATH": f"{bin_dir}:{os.environ['PATH']}", KEY_VAR: "scripted"}
    argv = [arg.replace(PRINTED_URL, llm.base_url) for arg in printed]
    out = run_check([*argv, "--workspace", str(tmp_path)], env=env)
    for rule in ("permission-request: tool commandExecution", "thinking", "model-change"):
        assert f"PASS  CAPABILITY  {rule}" in out
    assert "FAIL" not in out
