"""``--otel`` of ``run``, ``serve`` and ``worker``: export traces and metrics as the
``OTEL_*`` environment says. Nothing of OpenTelemetry is imported unless it is on."""

from __future__ import annotations

import argparse
import os
import sys

EXIT_USAGE = 2
_CARRIERS = ("TRACEPARENT", "TRACESTATE")


def add_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--otel",
        action="store_true",
        help="export OpenTelemetry traces and metrics as the OTEL_* environment says "
        "(OTLP to OTEL_EXPORTER_OTLP_ENDPOINT by default; on without this flag when "
        "OTEL_TRACES_EXPORTER, OTEL_METRICS_EXPORTER or OTEL_EXPORTER_OTLP_ENDPOINT is set; "
        "needs rawp-adapters[otel])",
    )


def start_exporting(args: argparse.Namespace) -> int | None:
    """Configure exporting if asked; an exit code when it cannot be done."""
    flag: bool | None = getattr(args, "otel", None)
    if flag is None:
        return None
    from rawp_adapters._telemetry._export import (
        TelemetryUnavailable,
        configure_exporting,
        exporting_requested,
    )

    if not exporting_requested(flag, os.environ):
        return None
    try:
        configure_exporting()
    except TelemetryUnavailable as exc:
        sys.stderr.write(f"rawp-adapters: {exc}\n")
        return EXIT_USAGE
    if args.command == "run" or (args.command == "serve" and args.listen is None):
        _join_starters_trace()
    return None


def _join_starters_trace() -> None:
    """A command that runs one session joins the trace of whoever started it, given in
    its ``TRACEPARENT`` (and ``TRACESTATE``) as for any process: the whole session,
    the agent's start too, is then under it. Made current before the event loop runs,
    whose tasks start from a copy of it."""
    from opentelemetry import context

    from rawp_adapters._telemetry import context_from

    carried = {name.lower(): os.environ[name] for name in _CARRIERS if name in os.environ}
    parent = context_from(carried)
    if parent is not None:
        context.attach(parent)
