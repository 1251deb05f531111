"""OpenTelemetry GenAI spans and metrics derived from a session's frames.

Nothing here imports ``opentelemetry`` until a host has configured it (a tracer or
meter provider set): :func:`session_telemetry` answers ``None`` then, and the
session runtime does nothing more per frame than it did without telemetry.
"""

from rawp_adapters._telemetry._switch import (
    attach,
    context_from,
    session_telemetry,
    trace_environment,
    trace_headers,
    trace_ids,
)

__all__ = [
    "attach",
    "context_from",
    "session_telemetry",
    "trace_environment",
    "trace_headers",
    "trace_ids",
]
