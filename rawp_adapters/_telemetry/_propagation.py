"""Trace context in and out: W3C ``traceparent``/``tracestate`` carried in frame
metadata, NATS headers and an agent process's environment."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

_W3C = TraceContextTextMapPropagator()
_FIELDS = ("traceparent", "tracestate")


@contextmanager
def attached(context: Context) -> Iterator[None]:
    token = otel_context.attach(context)
    try:
        yield
    finally:
        otel_context.detach(token)


def carrier(context: Context | None = None) -> dict[str, str]:
    """``traceparent`` (and ``tracestate``) of ``context`` (default: the current one);
    empty when it has no valid span."""
    headers: dict[str, str] = {}
    _W3C.inject(headers, context=context)
    return headers


def extracted(headers: Mapping[str, object] | None, default: Context | None = None) -> Context:
    """The span context ``headers`` carry as a parent, else ``default`` (the current
    context when not given). Malformed values are ignored, as W3C asks."""
    fields = {
        name: value
        for name in _FIELDS
        if headers is not None and isinstance(value := headers.get(name), str)
    }
    base = default if default is not None else otel_context.get_current()
    if "traceparent" not in fields:
        return base
    parent = _W3C.extract(fields, context=Context())
    if not trace.get_current_span(parent).get_span_context().is_valid:
        return base
    return parent


def current_environment() -> dict[str, str]:
    return {name.upper(): value for name, value in carrier().items()}


def current_ids() -> tuple[str, str] | None:
    span_context = trace.get_current_span().get_span_context()
    if not span_context.is_valid:
        return None
    return f"{span_context.trace_id:032x}", f"{span_context.span_id:016x}"
