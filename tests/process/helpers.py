"""Shared helpers of the process adapter's tests."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import psutil
from rawp_adapter_process import ProcessAdapter, ProcessSettings

FAKES = Path(__file__).parent / "fakes"
RPC_AGENT = FAKES / "rpc_agent.py"
JSON_AGENT = FAKES / "json_agent.py"


def fake_command(*flags: str) -> list[str]:
    """The command line of ``fakes/rpc_agent.py`` with ``flags``; ``-I -S`` keeps its start
    fast (it needs the stdlib only)."""
    return [sys.executable, "-I", "-S", str(RPC_AGENT), *flags]


def fake_adapter(*flags: str, **settings: Any) -> ProcessAdapter:
    """The adapter around ``fakes/rpc_agent.py`` started with ``flags``."""
    return ProcessAdapter.from_settings(
        {"command": fake_command(*flags), "agent_name": "fake", **settings}
    )


def single_turn_adapter(**settings: Any) -> ProcessAdapter:
    """The adapter in ``single_turn_process`` mode around ``fakes/json_agent.py``."""
    parsed = ProcessSettings.model_validate(
        {"single_turn": {"command": [sys.executable, str(JSON_AGENT)]}, **settings}
    )
    return ProcessAdapter(parsed, single_turn_process=True)


def fake_agent_processes() -> list[psutil.Process]:
    """The fake RPC agents this test process started that are still running."""
    found = []
    for child in psutil.Process().children():
        try:
            if str(RPC_AGENT) in child.cmdline():
                found.append(child)
        except psutil.Error:
            continue
    return found


def the_fake_agent() -> psutil.Process:
    """The one running fake RPC agent (fails when there is none or several)."""
    agents = fake_agent_processes()
    assert len(agents) == 1, f"expected one fake agent, found {agents}"
    return agents[0]


def running(pid: int) -> bool:
    """True while ``pid`` is a live process (a zombie counts as gone)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
