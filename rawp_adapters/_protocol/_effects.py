"""What the protocol state asks its driver to do, and the bounds it keeps."""

from __future__ import annotations

from dataclasses import dataclass

from rawp_adapters._adapter import AgentExit, InteractionOutcome, Turn
from rawp_adapters._frames import CloseReason, Mode


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
class RunModeSwitch:
    mode: Mode


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


Effect = (
    RunTurn | AbortTurn | TurnClosed | RunCompact | RunModeSwitch | BeginClose | SettleInteraction
)


@dataclass(frozen=True, slots=True)
class Limits:
    """The bounds the protocol state keeps (from ``SessionOptions``)."""

    frame_buffer: int = 1024
    max_open_interactions: int = 256
    interaction_timeout_ms: int = 60_000
    usage_steps: bool = False
