"""The metrics, made once per meter provider. Their attributes are bounded: agent,
model, tool, frame type, outcome; never an id."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Final
from weakref import WeakKeyDictionary

from opentelemetry import metrics
from opentelemetry.metrics import (
    CallbackOptions,
    Histogram,
    Meter,
    MeterProvider,
    Observation,
    UpDownCounter,
)

SCHEMA_URL: Final = "https://opentelemetry.io/schemas/1.44.0"
"""The semantic conventions followed (specs/telemetry.md)."""
_DURATION_BUCKETS: Final = (
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
)  # fmt: skip
"""The GenAI conventions' advice for ``gen_ai.client.operation.duration``."""
_TOKEN_BUCKETS: Final = tuple(float(4**power) for power in range(14))
"""The GenAI conventions' advice for ``gen_ai.client.token.usage``: 1, 4, 16, … 4^13."""


def library_version() -> str:
    try:
        return version("rawp-adapters")
    except PackageNotFoundError:
        return "0"


@dataclass(frozen=True, slots=True)
class Instruments:
    token_usage: Histogram
    operation_duration: Histogram
    """Turns (``invoke_agent``) and tool calls (``execute_tool``)."""
    interaction_wait: Histogram
    sessions_open: UpDownCounter
    frames: FrameCounts


class FrameCounts:
    """Frames the sessions emitted, by agent, read when the metrics are collected: a
    live session's count is its ``seq`` (nothing is counted per frame)."""

    def __init__(self) -> None:
        self.live: dict[object, tuple[str, Callable[[], int]]] = {}
        """Per live session: its agent and how many frames it has emitted so far."""
        self.ended: Counter[str] = Counter()

    def end(self, session: object) -> None:
        agent, emitted = self.live.pop(session, ("", lambda: 0))
        if agent:
            self.ended[agent] += emitted()

    def observe(self, _options: CallbackOptions) -> Iterable[Observation]:
        # The metric reader's thread: copies made in one step each, as the sessions'
        # loop may change both meanwhile.
        totals = Counter(dict(self.ended))
        for agent, emitted in list(self.live.values()):
            totals[agent] += emitted()
        return [Observation(count, {"gen_ai.agent.name": agent}) for agent, count in totals.items()]


def _instruments(meter: Meter) -> Instruments:
    frames = FrameCounts()
    meter.create_observable_counter(
        "rawp.frames",
        callbacks=[frames.observe],
        unit="{frame}",
        description="Frames sessions emitted, by agent (its rate is frames/s).",
    )
    return Instruments(
        token_usage=meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Tokens a turn used, by gen_ai.token.type.",
            explicit_bucket_boundaries_advisory=_TOKEN_BUCKETS,
        ),
        operation_duration=meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="How long a turn (invoke_agent) or a tool call (execute_tool) took.",
            explicit_bucket_boundaries_advisory=_DURATION_BUCKETS,
        ),
        interaction_wait=meter.create_histogram(
            "rawp.interaction.wait.duration",
            unit="s",
            description="How long a question (a permission request) waited for its answer.",
            explicit_bucket_boundaries_advisory=_DURATION_BUCKETS,
        ),
        sessions_open=meter.create_up_down_counter(
            "rawp.sessions.open", unit="{session}", description="Sessions open now."
        ),
        frames=frames,
    )


_made: WeakKeyDictionary[MeterProvider, Instruments] = WeakKeyDictionary()


def instruments() -> Instruments:
    """The instruments of the current meter provider (made at its first session)."""
    provider = metrics.get_meter_provider()
    made = _made.get(provider)
    if made is None:
        meter = provider.get_meter("rawp_adapters", library_version(), schema_url=SCHEMA_URL)
        made = _made[provider] = _instruments(meter)
    return made
