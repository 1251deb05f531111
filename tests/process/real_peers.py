"""The process adapter around a real, isolated omp or pi (``scripts/install-peers``)
talking to the scripted LLM of ``tests/support/llm_openai.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rawp_adapter_process import ProcessAdapter

from tests.support.llm_openai import ScriptedOpenAI
from tests.support.peers import PEER_NAMES, PeerName, make_peer, peer_available

PEERS = [
    pytest.param(
        name,
        marks=pytest.mark.skipif(
            not peer_available(name),
            reason=f"{name} is not installed: run scripts/install-peers",
        ),
    )
    for name in PEER_NAMES
]
"""``name`` parameters for every peer, skipped where it is not installed."""
TIMEOUT = 60.0
"""Bound of every wait on a real agent (a cold start under load takes a few seconds)."""


def only(name: PeerName) -> list[Any]:
    """The ``name`` parameter of :data:`PEERS` alone (a test of one agent's feature)."""
    return [PEERS[PEER_NAMES.index(name)]]


def peer_settings(
    name: PeerName,
    llm: ScriptedOpenAI,
    home: Path,
    agent_settings: dict[str, Any] | None = None,
    *,
    peer: dict[str, Any] | None = None,
    **settings: Any,
) -> tuple[dict[str, Any], Path]:
    """The process adapter's settings for an isolated ``name`` (with ``agent_settings``
    in its own settings file and ``peer`` passed on to ``make_peer``) against ``llm``,
    and its workspace."""
    agent = make_peer(
        name, llm_base_url=llm.base_url, home=home, settings=agent_settings, **(peer or {})
    )
    return {
        "command": agent.argv,
        "agent_name": name,
        "env_policy": "allowlist",
        "env_allowlist": [],
        "env": agent.env,
        **settings,
    }, agent.cwd


def peer_adapter(
    name: PeerName,
    llm: ScriptedOpenAI,
    home: Path,
    agent_settings: dict[str, Any] | None = None,
    *,
    peer: dict[str, Any] | None = None,
    **settings: Any,
) -> tuple[ProcessAdapter, Path]:
    """The adapter of :func:`peer_settings`, and its workspace."""
    adapter_settings, workspace = peer_settings(
        name, llm, home, agent_settings, peer=peer, **settings
    )
    return ProcessAdapter.from_settings(adapter_settings), workspace
