"""Building the codex adapter for a test, and what is left of a session's processes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psutil

from rawp_adapters import Adapter, AgentMetadata, create_adapter
from tests.codex.agent import codex_settings
from tests.support.llm_responses import ScriptedResponses

TIMEOUT = 90.0
"""Bound of every wait on the app-server (it answers in well under a second unloaded)."""


def make_adapter(
    binary: Path, llm: ScriptedResponses, tmp_path: Path, **extra: Any
) -> tuple[Adapter, Path]:
    """A codex adapter as a Master reaches it (``process`` + ``protocol: codex``) and its
    workspace."""
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    settings = codex_settings(binary, llm, tmp_path / "home", **extra)
    adapter = create_adapter(AgentMetadata(adapter_type="process", settings=settings))
    return adapter, workspace


def session_processes(session_id: str) -> list[psutil.Process]:
    """The processes carrying the session's marker (the app-server and what it started)."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get("RAWP_SESSION_ID") == session_id:
                found.append(proc)
        except psutil.Error:
            continue
    return found
