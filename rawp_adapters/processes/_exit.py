"""How an agent process ended, in DPS terms (§17.2.2)."""

from __future__ import annotations

import signal
from dataclasses import dataclass

from rawp_adapters._frames import AgentError, Severity


@dataclass(frozen=True, slots=True)
class ExitStatus:
    """How the agent process ended (see :func:`exit_status`)."""

    returncode: int
    exit_code: int | None
    """The exit code; ``None`` for a death by signal without one."""
    signal: str | None
    """The signal's name for a raw signal death (-N) or an exit code 128+N."""

    @property
    def clean(self) -> bool:
        return self.returncode == 0

    def describe(self) -> str:
        if self.returncode < 0:
            return f"was killed by {self.signal}"
        if self.signal is not None:
            return f"exited with code {self.returncode} ({self.signal})"
        return f"exited with code {self.returncode}"

    def error(
        self, *, severity: Severity = "fatal", stderr_tail: str | None = None
    ) -> AgentError | None:
        """The ``agent.error`` this end calls for (``None`` for exit 0)."""
        if self.clean:
            return None
        return AgentError(
            severity=severity,
            error_code="SIGNAL_EXIT" if self.signal is not None else "PROCESS_EXIT",
            message=f"the agent {self.describe()}",
            exit_code=self.exit_code,
            signal=self.signal,
            stderr_tail=stderr_tail,
        )


def exit_status(returncode: int) -> ExitStatus:
    """Map a Python return code: 0, 1-127, 128+N (a shell's signal exit), -N (a signal)."""
    if returncode < 0:
        return ExitStatus(returncode, None, _signal_name(-returncode))
    if returncode > 128 and (name := _signal_name(returncode - 128)) is not None:
        return ExitStatus(returncode, returncode, name)
    return ExitStatus(returncode, returncode, None)


def _signal_name(number: int) -> str | None:
    try:
        return signal.Signals(number).name
    except ValueError:
        return None
