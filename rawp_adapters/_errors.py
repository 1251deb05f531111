"""The exception tree of rawp-adapters: every exception a public module of rawp-adapters
or of its adapters (rawp_adapter_process, rawp_adapter_sdk, rawp_adapter_acp) exports is
a :class:`RawpError`, so ``except RawpError`` catches whatever the library raises on
purpose. Where a class is exported from elsewhere than ``rawp_adapters``, the module is
named.

RawpError
├── FrameError            a line or object is not a valid DPS frame (also a ValueError)
├── AdapterNotFoundError  no installed adapter has that adapter_type (also a LookupError)
├── AdapterLoadError      an entry point did not load into an Adapter class
├── InvalidSettingsError  AgentMetadata.settings do not fit the adapter (also a ValueError)
├── WorkspaceError        the workspace is not an existing absolute directory (a ValueError)
├── GuardError            the parent-death guard of an agent process could not start
│                         (also a RuntimeError; rawp_adapters.processes too)
├── SessionClosedError    a control frame was sent to a closed session
├── AgentFailure          raised by an adapter: the agent failed; carries the agent.error
│   └── StartFailed       the agent could not be started (SPAWN_FAILED and the like)
├── UnsupportedOperation  raised by an adapter: the agent cannot do this (compact, mode)
├── OperationRejected     raised by an adapter: the agent refused it (a model it lacks)
├── AgentWriteError       rawp_adapters.processes: the agent's stdin is closed
│                         (also a ConnectionError)
├── ToolError             rawp_adapters.host: raised by a host tool's handler; the call
│                         is answered as an error
├── CatalogRefused        rawp_adapters.host: the session did not take the host tools
├── InvariantError        rawp_adapters.testing: a frame stream breaks the DPS rules
│                         (also an AssertionError, so pytest reports it as a failure)
└── CoreError             rawp_adapter_sdk: raised by an agent core when its turn failed

Warnings are not RawpErrors: ``rawp_adapters.testing.pytest_plugin.ConformanceAdvisory``
(a UserWarning: an advisory rule's limit was exceeded) is defined in the pytest plugin,
which pytest imports in every run wherever rawp-adapters is installed; deriving it from
RawpError would import the whole library into each of those runs.
"""

from __future__ import annotations

from typing import Any, Self

from rawp_adapters._frames import AgentError, AgentErrorCode, SessionErrorCode


class RawpError(Exception):
    """Base of every error this library raises."""


class FrameError(RawpError, ValueError):
    """A line or object is not a valid DPS frame.

    ``frame_type`` is the frame's ``type`` when it could be read; ``data`` is the
    decoded JSON object when the line was JSON at all; ``code`` is the
    ``session.error`` code a session answers it with.
    """

    def __init__(
        self,
        message: str,
        *,
        code: SessionErrorCode = SessionErrorCode.INVALID_FRAME,
        frame_type: str | None = None,
        data: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.frame_type = frame_type
        self.data = data


class AdapterNotFoundError(RawpError, LookupError):
    def __init__(self, adapter_type: str, installed: list[str]) -> None:
        names = ", ".join(sorted(installed)) or "none"
        super().__init__(f"no adapter {adapter_type!r} is installed (installed: {names})")
        self.adapter_type = adapter_type
        self.installed = installed


class AdapterLoadError(RawpError):
    pass


class InvalidSettingsError(RawpError, ValueError):
    pass


class WorkspaceError(RawpError, ValueError):
    pass


class GuardError(RawpError, RuntimeError):
    """The parent-death guard of an agent process could not be started."""


class SessionClosedError(RawpError):
    pass


class AgentFailure(RawpError):
    """Raised by an adapter when the agent failed; the session emits ``error``."""

    def __init__(self, error: AgentError) -> None:
        super().__init__(error.message)
        self.error = error

    @classmethod
    def of(
        cls,
        message: str,
        *,
        code: str = AgentErrorCode.AGENT_ERROR,
        severity: str = "error",
        **fields: Any,
    ) -> Self:
        return cls(
            AgentError.model_validate(
                {"severity": severity, "error_code": code, "message": message, **fields}
            )
        )


class StartFailed(AgentFailure):
    """The agent could not be started. Defaults to a fatal ``SPAWN_FAILED``."""

    @classmethod
    def of(
        cls,
        message: str,
        *,
        code: str = AgentErrorCode.SPAWN_FAILED,
        severity: str = "fatal",
        **fields: Any,
    ) -> Self:
        return super().of(message, code=code, severity=severity, **fields)


class UnsupportedOperation(RawpError):
    """The agent cannot do what the control frame asks (answered as UNSUPPORTED)."""


class OperationRejected(RawpError):
    """The agent refused what the control frame asks, e.g. a model it does not have
    (answered as ``session.error REJECTED``; the session goes on)."""
