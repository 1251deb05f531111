"""The README's ``rawp-adapters check`` command lines, run as a user runs them: the
installed console script in a process of its own."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

from tests.support.peers import REPO_ROOT

SCRIPT = Path(sys.executable).parent / "rawp-adapters"
BOUND_S = 600
"""Bound on one whole check run (every rule), however loaded the machine."""
WAIT_S = 180
"""The kit's bound on each wait for the agent, its start included, in place of its
default minute: the suite runs four workers of agents on two cores (in CI, opencode
once took over 60 s to start while three checks of four agents each ran beside it)."""
PRINTED_URL = "http://127.0.0.1:8000/v1"
"""The model server's base URL the README's command lines name (a test's scripted
server replaces it)."""
PRINTED_MCP_URL = "http://127.0.0.1:8001/mcp"
"""The MCP server's URL the README's command lines name (a test's server replaces it)."""


def _commands() -> list[list[str]]:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    return [
        shlex.split(command)
        for block in re.findall(r"```sh\n(.*?)```", readme, re.DOTALL)
        for command in block.replace("\\\n", " ").splitlines()
    ]


def readme_check(
    adapter_type: str,
    core: str | None = None,
    *,
    protocol: str | None = None,
    program: str | None = None,
) -> list[str]:
    """The README's ``rawp-adapters check <adapter_type>`` line, as printed: for the SDK
    core ``core`` or the plugin of ``protocol``, or (``None``) the one that names none;
    with ``program``, the one whose ``command`` setting runs it."""
    for argv in _commands():
        if argv[:3] != ["rawp-adapters", "check", adapter_type]:
            continue
        cores = [arg for arg in argv if arg.startswith("core=")]
        protocols = [arg for arg in argv if arg.startswith("protocol=")]
        runs = program is None or any(a.startswith(f'command=["{program}"') for a in argv)
        if (
            runs
            and cores == ([f"core={core}"] if core else [])
            and protocols == ([f"protocol={protocol}"] if protocol else [])
        ):
            return argv
    named = f" of core={core}" if core else ""
    named += f" of protocol={protocol}" if protocol else ""
    named += f" running {program}" if program else ""
    raise AssertionError(f"the README shows no `rawp-adapters check {adapter_type}`{named}")


def run_check(argv: list[str], env: dict[str, str] | None = None) -> str:
    """Run ``argv`` (``rawp-adapters …``) with the installed script, each wait bounded by
    :data:`WAIT_S`; its output, once it exited 0."""
    done = subprocess.run(
        [str(SCRIPT), *argv[1:], "--timeout", str(WAIT_S)],
        env=env,
        capture_output=True,
        text=True,
        timeout=BOUND_S,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout
