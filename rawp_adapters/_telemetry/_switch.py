"""Whether telemetry is on, asked without importing ``opentelemetry`` when no one has:
a host that configured an SDK has imported it, so a process where it was never
imported has nothing to export to (and ``serve --stdio`` starts without it)."""

from __future__ import annotations

import sys
from collections.abc import Mapping, MutableMapping
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opentelemetry.context import Context

    from rawp_adapters._telemetry._observer import SessionTelemetry

_API_MODULES = ("opentelemetry.trace", "opentelemetry.metrics")


def _api_loaded() -> bool:
    modules = sys.modules
    return any(name in modules for name in _API_MODULES)


def session_telemetry(session_id: str, adapter_type: str) -> SessionTelemetry | None:
    """The observer of a new session's frames, or ``None`` when no tracer or meter
    provider is configured (then the session runs exactly as without telemetry)."""
    if not _api_loaded():
        return None
    from rawp_adapters._telemetry._observer import new_session_telemetry

    return new_session_telemetry(session_id, adapter_type)


def attach(context: Context | None) -> AbstractContextManager[object]:
    """Make ``context`` current for the block (``None``: change nothing)."""
    if context is None:
        return nullcontext()
    from rawp_adapters._telemetry._propagation import attached

    return attached(context)


def trace_environment() -> dict[str, str]:
    """``TRACEPARENT`` (and ``TRACESTATE``) of the current span, for an agent process
    that reads them to join the trace; empty when there is none."""
    if not _api_loaded():
        return {}
    from rawp_adapters._telemetry._propagation import current_environment

    return current_environment()


def trace_headers() -> dict[str, str]:
    """W3C ``traceparent`` (and ``tracestate``) of the current span, for a message
    that carries it to another process; empty when there is none."""
    if not _api_loaded():
        return {}
    from rawp_adapters._telemetry._propagation import carrier

    return carrier()


def context_from(headers: Mapping[str, str] | None) -> Context | None:
    """The trace context W3C headers carry, to :func:`attach`; ``None`` when they
    carry none or telemetry is off here."""
    if not headers or "traceparent" not in headers or not _api_loaded():
        return None
    from rawp_adapters._telemetry._propagation import extracted

    return extracted(headers)


def trace_ids(
    logger: object, method_name: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """A structlog processor: ``trace_id`` and ``span_id`` of the current span, if any."""
    if _api_loaded():
        from rawp_adapters._telemetry._propagation import current_ids

        ids = current_ids()
        if ids is not None:
            event_dict["trace_id"], event_dict["span_id"] = ids
    return event_dict
