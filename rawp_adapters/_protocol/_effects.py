"""What the protocol state asks its driver to do, and the bounds it keeps."""

from __future__ import annotations

from dataclasses import dataclass

from rawp_adapters._adapter import (
    HOST_TOOL_TIMEOUT_MS,
    AgentExit,
    HostToolOutcome,
    InteractionOutcome,
    Turn,
)
from rawp_adapters._frames import (
    CloseReason,
    ModelListRequest,
    ModelSet,
    ModeSwitch,
    PlanSet,
    PromptSteer,
    ToolCatalogPublish,
)

Configuration = ModeSwitch | ToolCatalogPublish | ModelSet | ModelListRequest | PlanSet
"""Control requests that change (or read) how the agent is set up: carried out one at
a time in the order they were sent, each before any prompt or compaction sent after it."""


@dataclass(frozen=True, slots=True)
class RunTurn:
    """Call ``Adapter.prompt(turn)``; report with :meth:`SessionProtocol.turn_finished`."""

    turn: Turn


@dataclass(frozen=True, slots=True)
class AbortTurn:
    """Call ``Adapter.abort(turn)`` and give the turn the abort grace to end."""

    turn: Turn


@dataclass(frozen=True, slots=True)
class TurnClosed:
    """The turn has its end frame: stop waiting for it, cancel what still runs for it."""

    turn_id: str


@dataclass(frozen=True, slots=True)
class RunCompact:
    custom_instructions: str | None


@dataclass(frozen=True, slots=True)
class RunConfiguration:
    """Call the adapter's method for ``request``; report with
    :meth:`SessionProtocol.configured` (or ``operation_failed``)."""

    request: Configuration


@dataclass(frozen=True, slots=True)
class RunSteer:
    """Call ``Adapter.steer(turn, message)``; steers run in the order they were sent."""

    turn: Turn
    message: PromptSteer


@dataclass(frozen=True, slots=True)
class BeginClose:
    """Close the session: run :meth:`SessionProtocol.begin_close` from a task."""

    reason: CloseReason
    agent_exit: AgentExit | None = None


@dataclass(frozen=True, slots=True)
class SettleInteraction:
    """Wake the adapter waiting on this interaction with its outcome."""

    interaction_id: str
    outcome: InteractionOutcome


@dataclass(frozen=True, slots=True)
class HostCallProgress:
    """Pass the Master's streamed output to the agent waiting on this host call."""

    invocation_id: str
    output: str


@dataclass(frozen=True, slots=True)
class SettleHostCall:
    """Wake the adapter waiting on this host call with its outcome."""

    invocation_id: str
    outcome: HostToolOutcome


Effect = (
    RunTurn
    | AbortTurn
    | TurnClosed
    | RunCompact
    | RunConfiguration
    | RunSteer
    | BeginClose
    | SettleInteraction
    | HostCallProgress
    | SettleHostCall
)


@dataclass(frozen=True, slots=True)
class Limits:
    """The bounds the protocol state keeps (from ``SessionOptions``)."""

    frame_buffer: int = 1024
    max_open_interactions: int = 256
    interaction_timeout_ms: int = 60_000
    host_tool_timeout_ms: int = HOST_TOOL_TIMEOUT_MS
    usage_steps: bool = False
