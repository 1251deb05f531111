"""The Codex app-server as the tests run it: the binary ``scripts/install-codex`` puts in
``.cache/codex``, offline against a scripted Responses server (a custom model provider,
an API key in the environment, no login), with a model catalog of its own so that codex
knows the scripted models (``model/list`` lists them; the freeform ``apply_patch`` tool
is offered)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.llm_responses import ScriptedResponses
from tests.support.peers import REPO_ROOT

CODEX_ROOT = REPO_ROOT / ".cache" / "codex" / "node_modules" / "@openai"
MODELS = ("fake-model", "fake-model-2")
EFFORTS = ("low", "medium", "high")
KEY_VAR = "SCRIPTED_LLM_KEY"


def codex_binary() -> Path | None:
    """The native ``codex`` of the pinned install, if it is there."""
    found = sorted(CODEX_ROOT.glob("codex-*/vendor/*/bin/codex"))
    return found[0] if found else None


def _model(slug: str, priority: int) -> dict[str, Any]:
    """A catalog entry as codex 0.169.0 reads ``model_catalog_json`` (every field it
    requires; ``apply_patch_tool_type`` freeform offers ``apply_patch``)."""
    return {
        "slug": slug,
        "display_name": slug,
        "description": "A scripted model on 127.0.0.1.",
        "default_reasoning_level": "medium",
        "supported_reasoning_levels": [
            {"effort": effort, "description": effort} for effort in EFFORTS
        ],
        "shell_type": "unified_exec",
        "visibility": "list",
        "supported_in_api": True,
        "priority": priority,
        "apply_patch_tool_type": "freeform",
        "context_window": 128000,
        "truncation_policy": {"mode": "tokens", "limit": 10000},
        "supports_parallel_tool_calls": False,
        "input_modalities": ["text"],
        "base_instructions": "You are a coding agent driven by a test.",
        "support_verbosity": False,
        "experimental_supported_tools": [],
    }


def write_catalog(path: Path) -> Path:
    models = [_model(slug, i) for i, slug in enumerate(MODELS, start=1)]
    path.write_text(json.dumps({"models": models}), encoding="utf-8")
    return path


def codex_settings(
    binary: Path, llm: ScriptedResponses, home: Path, **extra: Any
) -> dict[str, Any]:
    """Settings of the ``process`` + ``codex`` adapter against ``llm``, its files under
    ``home``."""
    home.mkdir(parents=True, exist_ok=True)
    catalog = write_catalog(home / "models.json")
    return {
        "protocol": "codex",
        "command": [str(binary), "app-server"],
        "config": {
            "model_provider": "scripted",
            "model_providers.scripted.name": "scripted",
            "model_providers.scripted.base_url": llm.base_url,
            "model_providers.scripted.wire_api": "responses",
            "model_providers.scripted.env_key": KEY_VAR,
            "model_providers.scripted.request_max_retries": 0,
            "model_providers.scripted.stream_max_retries": 0,
            "model_catalog_json": str(catalog),
            "analytics.enabled": False,
            "features.plugins": False,
        },
        "model": MODELS[0],
        "env_policy": "allowlist",
        "env_allowlist": ["PATH"],
        "env": {KEY_VAR: "scripted", "HOME": str(home), "RUST_LOG": "warn"},
        **extra,
    }
