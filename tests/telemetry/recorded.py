"""What the in-memory SDK recorded: finished spans as a tree, metric points by name."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from opentelemetry.sdk.metrics.export import (
    HistogramDataPoint,
    InMemoryMetricReader,
    NumberDataPoint,
)
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


@dataclass(frozen=True)
class Point:
    attributes: Mapping[str, Any]
    value: float
    """A sum's value, or a histogram's sum."""
    count: int
    """A histogram's count (1 for a sum)."""


@dataclass(frozen=True)
class Recorded:
    exporter: InMemorySpanExporter
    reader: InMemoryMetricReader

    @property
    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def span(self, name: str) -> ReadableSpan:
        """The one finished span called ``name``."""
        [span] = [span for span in self.spans if span.name == name]
        return span

    def ids(self, name: str) -> tuple[str, str]:
        """The trace id and span id (hex) of the one finished span called ``name``."""
        context = self.span(name).context
        assert context is not None
        return f"{context.trace_id:032x}", f"{context.span_id:016x}"

    def children(self, parent: ReadableSpan) -> list[str]:
        """The names of ``parent``'s finished children, in the order they started."""
        parent_id = parent.context.span_id if parent.context else None
        found = [s for s in self.spans if s.parent is not None and s.parent.span_id == parent_id]
        return [s.name for s in sorted(found, key=lambda s: s.start_time or 0)]

    def tree(self) -> list[str]:
        """Every finished span as ``"parent > name"`` lines (roots: ``"> name"``)."""
        by_id = {s.context.span_id: s.name for s in self.spans if s.context is not None}
        return sorted(
            f"{by_id.get(s.parent.span_id, '?') if s.parent else ''} > {s.name}" for s in self.spans
        )

    def points(self, name: str | None = None) -> list[Point]:
        """The points of the metric ``name`` (``None``: of every metric)."""
        data = self.reader.get_metrics_data()
        found: list[Point] = []
        for resource in data.resource_metrics if data is not None else []:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if name is not None and metric.name != name:
                        continue
                    for point in metric.data.data_points:
                        attributes = dict(point.attributes or {})
                        if isinstance(point, HistogramDataPoint):
                            found.append(Point(attributes, point.sum, point.count))
                        elif isinstance(point, NumberDataPoint):
                            found.append(Point(attributes, point.value, 1))
        return found
