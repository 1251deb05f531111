"""Real ACP agents, isolated and offline, for the ACP adapter's tests.

``scripts/install-acp-peers`` installs them pinned into :data:`ACP_PEERS_DIR`
(``.cache/acp-peers/{claude,codex,gemini,qwen,opencode}``); omp's ACP mode runs the omp
that ``scripts/install-peers`` put in ``.cache/peers/omp``, the Copilot CLI's the CLI of
``scripts/install-copilot`` (``.cache/copilot``). :func:`acp_settings` gives the
adapter's settings for one agent against a scripted model server (command line, a
throw-away ``HOME`` with the agent's config files, the environment), as
the project guide ``peer/ACP.md`` (in the shared folder beside the repository) measured them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal, get_args

from tests.support.peers import REPO_ROOT, make_peer, offline_env, peer_available

AcpAgentName = Literal["omp", "claude", "qwen", "codex", "gemini", "opencode", "copilot"]
ACP_AGENTS: tuple[AcpAgentName, ...] = get_args(AcpAgentName)
ACP_PEERS_DIR = REPO_ROOT / ".cache" / "acp-peers"

_ENTRY = {
    "claude": "node_modules/@agentclientprotocol/claude-agent-acp/dist/index.js",
    "codex": "node_modules/@agentclientprotocol/codex-acp/dist/index.js",
    "gemini": "node_modules/@google/gemini-cli/bundle/gemini.js",
    "qwen": "node_modules/@qwen-code/qwen-code/cli.js",
    "opencode": "node_modules/opencode-linux-x64/bin/opencode",
}
COPILOT_CLI = REPO_ROOT / ".cache" / "copilot" / "node_modules" / "@github" / "copilot-linux-x64"
"""The Copilot CLI of ``scripts/install-copilot`` (the copilot core's), in ACP mode here."""


def acp_available(name: AcpAgentName) -> bool:
    if name == "omp":
        return peer_available("omp")
    if name == "copilot":
        return (COPILOT_CLI / "copilot").exists()
    return (ACP_PEERS_DIR / name / _ENTRY[name]).exists()


def program_dir(name: AcpAgentName) -> Path:
    """The folder of the agent's program, to put on the PATH (opencode, copilot)."""
    if name == "copilot":
        return COPILOT_CLI
    return (ACP_PEERS_DIR / name / _ENTRY[name]).parent


def wire_format(name: AcpAgentName) -> str:
    """The model API the agent speaks: ``openai``, ``anthropic``, ``responses``, ``gemini``."""
    return {
        "omp": "openai",
        "qwen": "openai",
        "opencode": "openai",
        "copilot": "openai",
        "claude": "anthropic",
        "codex": "responses",
        "gemini": "gemini",
    }[name]


def _write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


SECOND_OMP_MODEL = "second-model"
"""A second model of omp's scripted provider, to switch to."""


def _add_model(models_yml: Path, model_id: str) -> None:
    """One more model in omp's ``models.yml`` (JSON, which is YAML), like the first."""
    config = json.loads(models_yml.read_text(encoding="utf-8"))
    for provider in config["providers"].values():
        first = provider["models"][0]
        provider["models"].append({**first, "id": model_id, "name": model_id})
    models_yml.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")


_QUIET_SETTINGS = {
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
}


def acp_settings(
    name: AcpAgentName, *, llm_url: str, home: Path, **extra: Any
) -> tuple[dict[str, Any], Path]:
    """The adapter settings (``protocol`` left out) running ``name`` against the scripted
    model server at ``llm_url`` (``http://127.0.0.1:PORT``, no path), and its workspace."""
    home = home.resolve()
    workspace = home / "ws"
    workspace.mkdir(parents=True, exist_ok=True)
    node = "node"
    root = ACP_PEERS_DIR / name
    if name == "omp":
        peer = make_peer(
            "omp",
            llm_base_url=f"{llm_url}/v1",
            home=home,
            cwd=workspace,
            reasoning=True,  # thinking levels beyond "off"
        )
        _add_model(peer.config_dir / "models.yml", SECOND_OMP_MODEL)
        argv = [a if a != "rpc" else "acp" for a in peer.argv]
        argv += ["--approval-mode", "always-ask"]
        env = peer.env
    else:
        env = offline_env(home)
        if name == "claude":
            argv = [node, str(root / _ENTRY["claude"])]
            env.update(
                {
                    "ANTHROPIC_BASE_URL": llm_url,
                    "ANTHROPIC_API_KEY": "test-key",
                    "CLAUDE_CONFIG_DIR": str(home / ".claude"),
                    "CLAUDE_CODE_TMPDIR": str(home / "tmp"),
                    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                    "DISABLE_AUTOUPDATER": "1",
                    "DISABLE_TELEMETRY": "1",
                    "DISABLE_ERROR_REPORTING": "1",
                    "CLAUDE_CODE_MAX_RETRIES": "0",
                }
            )
            if os.geteuid() == 0:
                env["IS_SANDBOX"] = "1"  # claude-agent-acp refuses root otherwise
            # claude-agent-acp 0.101 starts a session in "auto" mode (a classifier model
            # decides, the client is never asked) unless settings name a default mode
            _write_json(
                home / ".claude" / "settings.json", {"permissions": {"defaultMode": "default"}}
            )
        elif name == "qwen":
            argv = [node, str(root / _ENTRY["qwen"]), "--acp", "--auth-type", "openai"]
            argv += ["--model", "fake-model", "--approval-mode", "default"]
            env.update(
                {
                    "OPENAI_BASE_URL": f"{llm_url}/v1",
                    "OPENAI_API_KEY": "test-key",
                    "OPENAI_MODEL": "fake-model",
                }
            )
            settings = {"security": {"auth": {"selectedType": "openai"}}, **_QUIET_SETTINGS}
            _write_json(home / ".qwen" / "settings.json", settings)
        elif name == "opencode":
            argv = [str(root / _ENTRY["opencode"]), "acp", "--pure"]
            env.update(opencode_env(f"{llm_url}/v1"))
        elif name == "copilot":
            argv = [str(COPILOT_CLI / "copilot"), "--acp", "--stdio"]
            env.update(copilot_env(f"{llm_url}/v1"))
        elif name == "codex":
            argv = [node, str(root / _ENTRY["codex"])]
            codex_home = home / ".codex"
            codex_home.mkdir(parents=True, exist_ok=True)
            (codex_home / "config.toml").write_text(
                'model = "fake-model"\nmodel_provider = "fake"\n'
                '[model_providers.fake]\nname = "fake"\n'
                f'base_url = "{llm_url}/v1"\nwire_api = "responses"\nenv_key = "FAKE_LLM_KEY"\n'
                "request_max_retries = 0\nstream_max_retries = 0\n[analytics]\nenabled = false\n"
                '[otel]\nexporter = "none"\n',
                encoding="utf-8",
            )
            # codex 0.166 dropped approval_policy "untrusted" (ask for every command that
            # is not read-only): it asks for what an execpolicy rule marks "prompt"
            rules = codex_home / "rules"
            rules.mkdir(exist_ok=True)
            (rules / "default.rules").write_text(
                'prefix_rule(pattern=["touch"], decision="prompt")\n', encoding="utf-8"
            )
            env.update(
                {
                    "CODEX_HOME": str(codex_home),
                    "FAKE_LLM_KEY": "x",
                    "RUST_LOG": "warn",
                    # on-request approvals, answered by the client (the default mode,
                    # "agent", has a model review them instead), workspace-write sandbox
                    "INITIAL_AGENT_MODE": "workspace-write",
                }
            )
        else:
            argv = [node, str(root / _ENTRY["gemini"]), "--acp", "--model", "gemini-2.5-flash"]
            env.update(
                {
                    "GEMINI_API_KEY": "test-key",
                    "GOOGLE_GEMINI_BASE_URL": llm_url,
                    "GEMINI_CLI_NO_RELAUNCH": "true",
                    "GEMINI_TELEMETRY_ENABLED": "false",
                }
            )
            settings = {
                "security": {"auth": {"selectedType": "gemini-api-key"}},
                "model": {"name": "gemini-2.5-flash"},
                **_QUIET_SETTINGS,
            }
            _write_json(home / ".gemini" / "settings.json", settings)
    settings_out: dict[str, Any] = {
        "command": argv,
        "agent_name": name,
        "env_policy": "allowlist",
        "env_allowlist": [],
        "env": env,
        **extra,
    }
    return settings_out, workspace


def opencode_env(base_url: str) -> dict[str, str]:
    """opencode offline against the chat completions server at ``base_url``: its config
    (``OPENCODE_CONFIG_CONTENT``) has one provider of the bundled
    ``@ai-sdk/openai-compatible`` and asks before every tool; no model list fetched, no
    plugin, update or LSP download."""
    config = {
        "$schema": "https://opencode.ai/config.json",
        "model": "scripted/fake-model",
        "provider": {
            "scripted": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Scripted",
                "options": {"baseURL": base_url, "apiKey": "test-key"},
                "models": {"fake-model": {}, "fake-model-2": {}},
            }
        },
        "enabled_providers": ["scripted"],
        "permission": "ask",
        "agent": {"title": {"disable": True}},
        "autoupdate": False,
        "share": "disabled",
    }
    return {
        "OPENCODE_CONFIG_CONTENT": json.dumps(config),
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
        "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
        "OPENCODE_DISABLE_CLAUDE_CODE": "1",
        "OPENCODE_DISABLE_SHARE": "1",
    }


def copilot_env(base_url: str) -> dict[str, str]:
    """The Copilot CLI offline with the chat completions server at ``base_url`` as its
    provider (no GitHub login)."""
    return {
        "COPILOT_PROVIDER_BASE_URL": base_url,
        "COPILOT_PROVIDER_TYPE": "openai",
        "COPILOT_PROVIDER_API_KEY": "test-key",
        "COPILOT_MODEL": "fake-model",
        "COPILOT_OFFLINE": "true",
    }
