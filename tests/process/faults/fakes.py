"""Running the scripted fake agent (``fake_agent.py``) behind the real ProcessAdapter."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import psutil
from rawp_adapter_process import ProcessAdapter, ProcessSettings

FAKE_AGENT = Path(__file__).with_name("fake_agent.py")


def fake_command(scenario: str, arg: object = None) -> list[str]:
    """The fake's command line; ``-I -S`` keeps its start fast (it needs the stdlib only)."""
    command = [sys.executable, "-I", "-S", str(FAKE_AGENT), scenario]
    return command if arg is None else [*command, str(arg)]


def fake_adapter(scenario: str, arg: object = None, **settings: Any) -> ProcessAdapter:
    return ProcessAdapter(ProcessSettings(command=fake_command(scenario, arg), **settings))


def fake_agent_processes() -> list[psutil.Process]:
    """The fake agents this test process started that are still running."""
    found = []
    for child in psutil.Process().children():
        try:
            if str(FAKE_AGENT) in child.cmdline():
                found.append(child)
        except psutil.Error:
            continue
    return found


def the_fake_agent() -> psutil.Process:
    """The one running fake agent (fails when there is none or several)."""
    agents = fake_agent_processes()
    assert len(agents) == 1, f"expected one fake agent, found {agents}"
    return agents[0]


def is_gone(pid: int) -> bool:
    """No such process, or only its zombie left (it can no longer run)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True
