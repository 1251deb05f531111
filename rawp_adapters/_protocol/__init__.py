"""The session's protocol state, with no I/O and no clock of its own.

Control frames, adapter payloads and the outcomes of the work it asked for go in;
numbered frames and effects (what the driver must now do) come out. Every rule of
RAWP-DPS that does not depend on how an agent is reached lives here, once
(:mod:`._state`); :class:`rawp_adapters.Session` is the anyio driver around it.
"""

from rawp_adapters._protocol._effects import (
    AbortTurn,
    BeginClose,
    Configuration,
    Effect,
    HostCallProgress,
    Limits,
    RunCompact,
    RunConfiguration,
    RunSteer,
    RunTurn,
    SettleHostCall,
    SettleInteraction,
    TurnClosed,
)
from rawp_adapters._protocol._judge import judge
from rawp_adapters._protocol._state import FORGED_FRAME, RUNTIME_OWNED, SessionProtocol
from rawp_adapters._protocol._turn import UNFINISHED_TOOL_OUTPUT

__all__ = [
    "FORGED_FRAME",
    "RUNTIME_OWNED",
    "UNFINISHED_TOOL_OUTPUT",
    "AbortTurn",
    "BeginClose",
    "Configuration",
    "Effect",
    "HostCallProgress",
    "Limits",
    "RunCompact",
    "RunConfiguration",
    "RunSteer",
    "RunTurn",
    "SessionProtocol",
    "SettleHostCall",
    "SettleInteraction",
    "TurnClosed",
    "judge",
]
