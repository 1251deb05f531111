"""A checked session on the real Claude core, offline against the scripted Anthropic API
(shared by the Claude core's tests)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rawp_adapter_sdk import SdkAdapter
from rawp_adapter_sdk.cores.claude import ClaudeCore

from rawp_adapters import SessionOptions
from rawp_adapters.testing import Policy, SessionDriver, allow_all, drive
from tests.support.claude import claude_env
from tests.support.llm_anthropic import ScriptedAnthropic
from tests.support.processes import alive


@dataclass
class ClaudeRun:
    driver: SessionDriver
    core: ClaudeCore
    workspace: Path
    home: Path


def claude_settings(api: ScriptedAnthropic, tmp_path: Path, timeout_ms: int) -> dict[str, Any]:
    """The CLI's environment minus the dirs the core isolates itself; HOME is a fresh
    directory so that anything the CLI writes outside the session's state shows."""
    env = claude_env(api.base_url, tmp_path / "unused")
    for isolated in ("CLAUDE_CONFIG_DIR", "CLAUDE_CODE_TMPDIR", "TMPDIR"):
        del env[isolated]
    env["HOME"] = str(tmp_path / "home")
    (tmp_path / "home").mkdir(exist_ok=True)
    (tmp_path / "state").mkdir(exist_ok=True)
    return {
        "core": "claude",
        "core_options": {"env": env, "state_dir": str(tmp_path / "state")},
        "permission_timeout_ms": timeout_ms,
    }


@asynccontextmanager
async def claude_session(
    api: ScriptedAnthropic,
    tmp_path: Path,
    *,
    policy: Policy = allow_all,
    timeout_ms: int = 30_000,
    abort_grace: float = 5.0,
    cli_path: Path | None = None,
    adapter_class: type[SdkAdapter] = SdkAdapter,
    host_tool_timeout_ms: int = 30_000,
) -> AsyncIterator[ClaudeRun]:
    """A checked session on the Claude core; on exit, asserts that nothing it started
    is left (CLI, its children, the watchdog, the state directory)."""
    settings = claude_settings(api, tmp_path, timeout_ms)
    if cli_path is not None:
        settings["core_options"]["cli_path"] = str(cli_path)
    adapter = adapter_class.from_settings(settings)
    core = adapter.core
    assert isinstance(core, ClaudeCore)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    options = SessionOptions(abort_grace=abort_grace, host_tool_timeout_ms=host_tool_timeout_ms)
    async with drive(adapter, workspace=workspace, policy=policy, timeout=30, options=options) as d:
        assert core.cli_pid is not None
        assert core.guard_pid is not None
        started = [core.cli_pid, core.guard_pid]
        yield ClaudeRun(d, core, workspace, tmp_path / "home")
    assert [pid for pid in started if alive(pid)] == []
    assert core.cli_pid is None
    assert list((tmp_path / "state").iterdir()) == []
