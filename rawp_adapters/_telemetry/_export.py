"""Exporting, for the CLI (``--otel``) and hosts that want it done for them: an SDK
tracer and meter provider configured by the ``OTEL_*`` environment, as the SDK reads
it. The SDK is imported only here, and only when exporting is asked for."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from rawp_adapters._errors import RawpError

if TYPE_CHECKING:
    from opentelemetry.sdk.metrics.export import MetricExporter
    from opentelemetry.sdk.trace.export import SpanExporter

TURNS_ON: Final = ("OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT")
"""Any of these set turns exporting on without ``--otel``."""
_INSTALL: Final = "pip install 'rawp-adapters[otel]'"
_EXPORTERS: Final = frozenset({"otlp", "console", "none"})


class TelemetryUnavailable(RawpError):
    """Exporting was asked for but cannot be done (the SDK missing, an unknown exporter)."""


def exporting_requested(flag: bool, environ: Mapping[str, str]) -> bool:
    """``--otel``, or the environment names an exporter or a collector; never when
    ``OTEL_SDK_DISABLED`` is ``true``."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return flag or any(environ.get(name, "").strip() for name in TURNS_ON)


def _exporter_name(environ: Mapping[str, str], variable: str) -> str:
    name = environ.get(variable, "otlp").strip().lower() or "otlp"
    if name not in _EXPORTERS:
        raise TelemetryUnavailable(
            f"{variable}={name} is not supported here: use otlp, console or none"
        )
    return name


def _check_protocol(environ: Mapping[str, str]) -> None:
    """OTLP goes over HTTP (``http/protobuf``); a protocol the extra does not send is
    refused, not replaced by HTTP behind the user's back."""
    for variable in (
        "OTEL_EXPORTER_OTLP_PROTOCOL",
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
    ):
        protocol = environ.get(variable, "").strip().lower()
        if protocol and protocol != "http/protobuf":
            raise TelemetryUnavailable(
                f"{variable}={protocol} is not supported here: rawp-adapters[otel] sends "
                "OTLP over HTTP (http/protobuf); point OTEL_EXPORTER_OTLP_ENDPOINT at the "
                "collector's HTTP port (4318)"
            )


def configure_exporting(environ: Mapping[str, str] | None = None) -> None:
    """Set the global tracer and meter providers: ``OTEL_TRACES_EXPORTER`` and
    ``OTEL_METRICS_EXPORTER`` choose ``otlp`` (the default: OTLP over HTTP, to
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` or localhost:4318), ``console`` (stderr, never
    stdout: a ``--stdio`` bridge's frames are there) or ``none``; the resource comes from
    ``OTEL_SERVICE_NAME`` / ``OTEL_RESOURCE_ATTRIBUTES`` (service ``rawp-adapters``
    otherwise). What is buffered is sent at exit. Raises :class:`TelemetryUnavailable`."""
    environ = os.environ if environ is None else environ
    traces = _exporter_name(environ, "OTEL_TRACES_EXPORTER")
    metrics_name = _exporter_name(environ, "OTEL_METRICS_EXPORTER")
    if "otlp" in (traces, metrics_name):
        _check_protocol(environ)
    try:
        from opentelemetry import metrics, trace
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import (
            ConsoleMetricExporter,
            PeriodicExportingMetricReader,
        )
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
    except ImportError as exc:
        raise TelemetryUnavailable(f"exporting needs the OpenTelemetry SDK: {_INSTALL}") from exc
    resource = Resource.create()
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: "rawp-adapters"}))
    if traces != "none":
        span_exporter: SpanExporter
        if traces == "console":
            span_exporter = ConsoleSpanExporter(out=sys.stderr)
        else:
            span_exporter = _otlp_spans()
        tracer_provider = TracerProvider(resource=resource)
        tracer_provider.add_span_processor(BatchSpanProcessor(span_exporter))
        trace.set_tracer_provider(tracer_provider)
    if metrics_name != "none":
        metric_exporter: MetricExporter
        if metrics_name == "console":
            metric_exporter = ConsoleMetricExporter(out=sys.stderr)
        else:
            metric_exporter = _otlp_metrics()
        reader = PeriodicExportingMetricReader(metric_exporter)
        metrics.set_meter_provider(MeterProvider(resource=resource, metric_readers=[reader]))


def _otlp_spans() -> SpanExporter:
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError as exc:
        raise TelemetryUnavailable(f"OTLP export needs its exporter: {_INSTALL}") from exc
    return OTLPSpanExporter()


def _otlp_metrics() -> MetricExporter:
    try:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    except ImportError as exc:
        raise TelemetryUnavailable(f"OTLP export needs its exporter: {_INSTALL}") from exc
    return OTLPMetricExporter()
