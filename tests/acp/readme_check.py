"""The README's ``rawp-adapters check`` line of an ACP agent, run as printed against the
scripted model."""

from __future__ import annotations

import os
from pathlib import Path

from tests.support.llm_openai import ScriptedOpenAI
from tests.support.peers import offline_env
from tests.support.readme_checks import PRINTED_MCP_URL, PRINTED_URL, readme_check, run_check


def assert_readme_check_passes(
    program: str, bin_dir: Path, tmp_path: Path, mcp_url: str | None = None
) -> None:
    """The README's line for ``program`` as printed, ``bin_dir`` on the PATH, in a home of
    its own (``mcp_url`` the MCP server in place of the one it names): it passes, with the
    capabilities every ACP agent here has."""
    printed = readme_check("process", protocol="acp", program=program)
    env = offline_env(tmp_path / "home")
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with ScriptedOpenAI() as llm:
        argv = [arg.replace(PRINTED_URL, llm.base_url) for arg in printed]
        if mcp_url is not None:
            argv = [arg.replace(PRINTED_MCP_URL, mcp_url) for arg in argv]
        out = run_check([*argv, "--workspace", str(workspace)], env=env)
        assert llm.violations == []
    for rule in ("permission-request", "tool-events", "thinking"):
        assert f"PASS  CAPABILITY  {rule}" in out
    assert "PASS  MUST        permission-deadline" in out
    assert "FAIL" not in out
