"""Helpers for driving the real Claude Agent SDK (``claude-agent-sdk``) offline in tests.

The SDK spawns its bundled Claude Code CLI, which talks to ``ANTHROPIC_BASE_URL``; point it at
:class:`tests.support.llm_anthropic.ScriptedAnthropic` and pass :func:`claude_env` as
``ClaudeAgentOptions(env=...)`` (together with ``setting_sources=[]``) and the CLI opens no
connection other than to the scripted server and keeps all its state under ``state_dir``.

This module does not import the SDK (importing it takes about a second).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import pytest

__all__ = [
    "bundled_claude_cli",
    "claude_cli_pid",
    "claude_env",
    "claude_sdk_available",
    "needs_claude_sdk",
]


def claude_env(base_url: str, state_dir: Path) -> dict[str, str]:
    """Environment for the Claude Code CLI: scripted API at ``base_url``, state in ``state_dir``.

    Creates ``state_dir/config`` (``CLAUDE_CONFIG_DIR``: settings, sessions, projects) and
    ``state_dir/tmp`` (``CLAUDE_CODE_TMPDIR`` and ``TMPDIR``: Bash task dirs, sockets). Turns off
    every non-essential connection, telemetry, auto-update, error reporting and API retries.
    """
    config_dir = state_dir / "config"
    tmp_dir = state_dir / "tmp"
    config_dir.mkdir(parents=True, exist_ok=True)
    tmp_dir.mkdir(parents=True, exist_ok=True)
    return {
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": "test-key",
        "CLAUDE_CONFIG_DIR": str(config_dir),
        "CLAUDE_CODE_TMPDIR": str(tmp_dir),
        "TMPDIR": str(tmp_dir),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_MAX_RETRIES": "0",
    }


def _sdk_package() -> Path | None:
    try:
        spec = importlib.util.find_spec("claude_agent_sdk")
    except (ImportError, ValueError):
        return None
    locations = list(spec.submodule_search_locations or ()) if spec is not None else []
    return Path(locations[0]) if locations else None


def bundled_claude_cli() -> Path | None:
    """The Claude Code CLI bundled in the ``claude_agent_sdk`` wheel
    (``claude_agent_sdk/_bundled/claude``), or None."""
    package = _sdk_package()
    if package is None:
        return None
    for name in ("claude", "claude.exe"):
        candidate = package / "_bundled" / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def claude_sdk_available() -> bool:
    """True when ``claude_agent_sdk`` is installed and a Claude Code CLI can be found.

    The CLI is the one bundled in the wheel or, failing that, ``claude`` on ``PATH`` (the
    SDK's own fallback).
    """
    if _sdk_package() is None:
        return False
    return bundled_claude_cli() is not None or shutil.which("claude") is not None


needs_claude_sdk = pytest.mark.skipif(
    not claude_sdk_available(),
    reason="claude-agent-sdk with its Claude Code CLI is not installed "
    "(pip install 'rawp-adapter-sdk[claude]')",
)
"""Skips a test (or module, class) that drives the real SDK when it is not installed."""


def claude_cli_pid(client: object) -> int | None:
    """Pid of the CLI process behind a connected ``ClaudeSDKClient``, or None.

    Reads the SDK's private ``client._transport._process.pid`` (``SubprocessCLITransport``
    holding an ``anyio.abc.Process``); checked against claude-agent-sdk 0.2.186.
    """
    transport = getattr(client, "_transport", None)
    process = getattr(transport, "_process", None)
    pid = getattr(process, "pid", None)
    return pid if isinstance(pid, int) else None
