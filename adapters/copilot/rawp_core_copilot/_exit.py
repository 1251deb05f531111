"""The Copilot CLI gone: the SDK does not restart it, so its exit is the session's
fatal error, naming the exit code or the signal."""

from __future__ import annotations

import signal
import subprocess
from dataclasses import dataclass
from typing import Any

from rawp_adapter_sdk import CoreError

from rawp_adapters.frames import AgentErrorCode

REAP_TIMEOUT_S = 1.0
"""How long to wait for the exit code once the CLI's output has closed."""


@dataclass(frozen=True, slots=True)
class CliExited:
    """The CLI's connection closed while the core still used it."""

    error: CoreError


def exit_error(process: Any) -> CoreError:
    """The fatal error telling how ``process`` (the SDK's ``Popen`` of the CLI) ended."""
    try:
        code = process.wait(timeout=REAP_TIMEOUT_S)
    except (subprocess.TimeoutExpired, AttributeError, OSError):
        code = None
    if isinstance(code, int) and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = "unknown"
        message = f"the Copilot CLI was killed by signal {-code} ({name})"
        return CoreError(message, code=AgentErrorCode.SIGNAL_EXIT, fatal=True)
    said = f"exited with code {code}" if isinstance(code, int) else "closed its connection"
    return CoreError(f"the Copilot CLI {said}", code=AgentErrorCode.PROCESS_EXIT, fatal=True)
