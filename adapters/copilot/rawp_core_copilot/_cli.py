"""The Copilot CLI the SDK drives: where it is and which version it is.

The SDK would download the CLI from a release page when it finds none; the core never
lets it: the CLI is the one named by the ``cli_path`` option or ``COPILOT_CLI_PATH``
(``scripts/install-copilot`` installs it from npm).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import anyio
from rawp_adapter_sdk import CoreError

from rawp_adapters.frames import AgentErrorCode

CLI_PATH_ENV = "COPILOT_CLI_PATH"
VERSION_TIMEOUT_S = 30.0
_VERSION = re.compile(r"\d+\.\d+\.\d+(?:-[\w.]*\w)?")


def find_cli(cli_path: str | None) -> Path:
    """The CLI named by ``cli_path`` or ``COPILOT_CLI_PATH``; :class:`CoreError` if
    neither names an executable file."""
    named = cli_path or os.environ.get(CLI_PATH_ENV)
    if not named:
        raise CoreError(
            f"the copilot core needs the Copilot CLI: set the cli_path option or {CLI_PATH_ENV} "
            "(npm install @github/copilot)",
            code=AgentErrorCode.SPAWN_FAILED,
            fatal=True,
        )
    path = Path(named)
    if not path.is_file() or not os.access(path, os.X_OK):
        raise CoreError(
            f"the Copilot CLI {named!r} is not an executable file",
            code=AgentErrorCode.SPAWN_FAILED,
            fatal=True,
        )
    return path


async def cli_version(path: Path) -> str:
    """What ``copilot --version`` says its version is."""
    try:
        with anyio.fail_after(VERSION_TIMEOUT_S):
            done = await anyio.run_process([str(path), "--version"], check=False)
    except (OSError, TimeoutError) as exc:
        raise CoreError(
            f"the Copilot CLI {str(path)!r} did not tell its version: {exc}",
            code=AgentErrorCode.SPAWN_FAILED,
            fatal=True,
        ) from exc
    said = done.stdout.decode("utf-8", "replace")
    found = _VERSION.search(said)
    if done.returncode != 0 or found is None:
        raise CoreError(
            f"the Copilot CLI {str(path)!r} did not tell its version: {said.strip()!r}",
            code=AgentErrorCode.SPAWN_FAILED,
            fatal=True,
        )
    return found.group(0)
