"""The ACP agents that ship on PyPI, isolated and offline, for the ACP adapter's tests.

Each pins its own ACP SDK (Mistral Vibe ``agent-client-protocol`` 0.11.0, fast-agent
0.12.1), so
``scripts/install-acp-python`` gives each a venv of its own under :data:`ACP_PYTHON_DIR`
from its lock in ``tests/acp/locks/``. :func:`python_acp_settings` gives the adapter's
settings for one against the scripted chat completions server, in a throw-away home.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from tests.support.peers import REPO_ROOT, offline_env

PythonAcpAgent = Literal["vibe", "fast-agent"]
ACP_PYTHON_DIR = REPO_ROOT / ".cache" / "acp-python"

_PROGRAM = {"vibe": "vibe-acp", "fast-agent": "fast-agent"}
FAST_AGENT_MODEL = "kimi-k3"
"""The model fast-agent asks the scripted server for: it streams ``reasoning_content`` as
thinking only for a model its database marks so, and names it (``generic.kimi-k3``) a
reasoning model (an unknown name, ``fake-model``, gets no thinking)."""
FAST_AGENT_MCP = "kit"
"""The name of the MCP server of fast-agent's sessions (``tests/support/mcp_server.py``
over HTTP): fast-agent asks before the tools of MCP servers alone, so its tests give it
this one's ``stamp``, which it offers the model as ``kit__stamp``."""
SECOND_VIBE_MODEL = ("fake-2", "fake-model-2")
"""A second model of Vibe's scripted provider: its alias (the id to switch to) and the
model the scripted server then sees."""


def program_path(name: PythonAcpAgent) -> Path:
    return ACP_PYTHON_DIR / name / "bin" / _PROGRAM[name]


def python_acp_available(name: PythonAcpAgent) -> bool:
    return program_path(name).exists()


def python_acp_settings(
    name: PythonAcpAgent, *, base_url: str, home: Path, **extra: Any
) -> tuple[dict[str, Any], Path]:
    """The adapter settings (``protocol`` left out) running ``name`` against the chat
    completions server at ``base_url`` (``http://127.0.0.1:PORT/v1``), and its workspace."""
    home = home.resolve()
    workspace = home / "ws"
    workspace.mkdir(parents=True, exist_ok=True)
    env = offline_env(home)
    command = [str(program_path(name))]
    if name == "fast-agent":
        command = fast_agent_command()
        env.update(fast_agent_env(base_url, home))
    else:
        env.update(vibe_env(base_url))
        # the active model in its user config, not VIBE_ACTIVE_MODEL: a model switch is
        # written there, and the environment would win over it
        vibe_home = home / ".vibe"
        vibe_home.mkdir(exist_ok=True)
        (vibe_home / "config.toml").write_text('active_model = "fake"\n', encoding="utf-8")
    settings = {
        "command": command,
        "agent_name": name,
        "env_policy": "allowlist",
        "env_allowlist": [],
        "env": env,
        **extra,
    }
    return settings, workspace


def vibe_env(base_url: str) -> dict[str, str]:
    """Mistral Vibe with one provider on the scripted server, set by its ``VIBE_*``
    environment alone (JSON for the lists and tables of its ``config.toml``): no
    telemetry, update check or notification, and no session title, which it would ask of
    the model with the turn's transcript and no tools."""
    provider = {
        "name": "scripted",
        "api_base": base_url,
        "api_key_env_var": "SCRIPTED_LLM_KEY",
        "backend": "generic",
    }
    models = [
        {"name": "fake-model", "provider": "scripted", "alias": "fake"},
        {"name": SECOND_VIBE_MODEL[1], "provider": "scripted", "alias": SECOND_VIBE_MODEL[0]},
    ]
    return {
        "VIBE_PROVIDERS": json.dumps([provider]),
        "VIBE_MODELS": json.dumps(models),
        "VIBE_ENABLE_TELEMETRY": "false",
        "VIBE_ENABLE_UPDATE_CHECKS": "false",
        "VIBE_ENABLE_NOTIFICATIONS": "false",
        "VIBE_SESSION_LOGGING": json.dumps({"generate_titles": False}),
        "SCRIPTED_LLM_KEY": "test-key",
    }


def fast_agent_command(*flags: str) -> list[str]:
    """``fast-agent acp`` on the scripted model, with ``flags`` (``--shell``: its own
    shell and file tools, which it runs without asking)."""
    model = f"generic.{FAST_AGENT_MODEL}"
    return [str(program_path("fast-agent")), "acp", "--model", model, *flags]


def fast_agent_env(base_url: str, home: Path) -> dict[str, str]:
    """fast-agent's ``generic`` (chat completions) provider on the scripted server, set by
    its environment alone (pydantic-settings, ``__`` between a table and its key), and its
    home (sessions, log) in ``home`` instead of the workspace's ``.fast-agent``."""
    return {
        "GENERIC__BASE_URL": base_url,
        "GENERIC__API_KEY": "test-key",
        "FAST_AGENT_HOME": str(home / ".fast-agent"),
    }
