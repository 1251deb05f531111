"""What the protocol state asks its driver to do, and the bounds it keeps."""

from __future__ import annotations

import msgspec

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


# msgspec Structs, not dataclasses: defined at each ``serve --stdio`` start, ~40x faster.
class RunTurn(msgspec.Struct, frozen=True):
    """Call ``Adapter.prompt(turn)``; report with :meth:`SessionProtocol.turn_finished`."""

    turn: Turn


class AbortTurn(msgspec.Struct, frozen=True):
    """Call ``Adapter.abort(turn)`` and give the turn the abort grace to end."""

    turn: Turn


class TurnClosed(msgspec.Struct, frozen=True):
    """The turn has its end frame: stop waiting for it, cancel what still runs for it."""

    turn_id: str


class RunCompact(msgspec.Struct, frozen=True):
    custom_instructions: str | None


class RunConfiguration(msgspec.Struct, frozen=True):
    """Call the adapter's method for ``request``; report with
    :meth:`SessionProtocol.configured` (or ``operation_failed``)."""

    request: Configuration


class RunSteer(msgspec.Struct, frozen=True):
    """Call ``Adapter.steer(turn, message)``; steers run in the order they were sent."""

    turn: Turn
    message: PromptSteer


class BeginClose(msgspec.Struct, frozen=True):
    """Close the session: run :meth:`SessionProtocol.begin_close` from a task."""

    reason: CloseReason
    agent_exit: AgentExit | None = None


class SettleInteraction(msgspec.Struct, frozen=True):
    """Wake the adapter waiting on this interaction with its outcome."""

    interaction_id: str
    outcome: InteractionOutcome


class HostCallProgress(msgspec.Struct, frozen=True):
    """Pass the Master's streamed output to the agent waiting on this host call."""

    invocation_id: str
    output: str


class SettleHostCall(msgspec.Struct, frozen=True):
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


class Limits(msgspec.Struct, frozen=True):
    """The bounds the protocol state keeps (from ``SessionOptions``)."""

    frame_buffer: int = 1024
    max_open_interactions: int = 256
    interaction_timeout_ms: int = 60_000
    host_tool_timeout_ms: int = HOST_TOOL_TIMEOUT_MS
    usage_steps: bool = False
