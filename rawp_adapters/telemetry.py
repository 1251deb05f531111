"""OpenTelemetry for a Master: the session runtime emits GenAI spans and metrics once a
tracer or meter provider is configured (see docs/telemetry.md and specs/telemetry.md).

- :func:`trace_ids`: a structlog processor adding ``trace_id`` and ``span_id`` of the
  current span, for an application that configures structlog itself.
- :func:`configure_exporting`: what ``--otel`` does: an SDK exporting by the ``OTEL_*``
  environment (needs ``rawp-adapters[otel]``).
"""

from rawp_adapters._telemetry import trace_ids
from rawp_adapters._telemetry._export import configure_exporting

__all__ = ["configure_exporting", "trace_ids"]
