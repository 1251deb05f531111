"""Every RAWP-DPS frame this project reads or writes, as pydantic v2 models.

This module is the one place that holds the names the public spec does not show
(marked ``ours``): envelope fields, payload fields, codes and enum values. Each
field carries its provenance in the JSON Schema (``x-source``):

- ``§17``   RAWP-DPS 1.0.1 section 17 (normative)
- ``1.0.0`` read in RAWP-DPS 1.0.0, carried forward
- ``TOC``   the frame name is in the 1.0.1 table of contents
- ``CRS``   RAWP-CRS 1.0.1
- ``ours``  our decision where the spec text is not available

Payload models are what adapters build; frame models (``*Frame``) wrap a payload
in the envelope, and :data:`Frame` is the discriminated union on ``type``.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Final, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.fields import FieldInfo

DPS_VERSION: Final = "rawp-dps-1.0"
"""The protocol version string, also the value of ``RAWP_DPS_VERSION`` [§17]."""

Source = Literal["§17", "1.0.0", "TOC", "CRS", "ours"]


def _doc(source: Source, description: str) -> FieldInfo:
    info: FieldInfo = Field(description=description, json_schema_extra={"x-source": source})
    return info


def _config(source: Source) -> ConfigDict:
    return ConfigDict(frozen=True, extra="ignore", json_schema_extra={"x-source": source})


class Payload(BaseModel):
    """Base of every frame payload. Unknown fields are ignored when reading."""

    model_config = ConfigDict(frozen=True, extra="ignore")


# --------------------------------------------------------------------------- codes


class SessionErrorCode(StrEnum):
    """``session.error`` codes. ``PROMPT_IN_PROGRESS`` is §17; the rest are ours."""

    PROMPT_IN_PROGRESS = "PROMPT_IN_PROGRESS"
    UNSUPPORTED = "UNSUPPORTED"
    INVALID_FRAME = "INVALID_FRAME"
    NO_ACTIVE_TURN = "NO_ACTIVE_TURN"
    UNKNOWN_INTERACTION = "UNKNOWN_INTERACTION"
    SESSION_CLOSED = "SESSION_CLOSED"
    UNSUPPORTED_VERSION = "UNSUPPORTED_VERSION"


class AgentErrorCode(StrEnum):
    """``agent.error`` codes. ``SIGNAL_EXIT`` is §17; the rest are ours."""

    SIGNAL_EXIT = "SIGNAL_EXIT"
    PROCESS_EXIT = "PROCESS_EXIT"
    SPAWN_FAILED = "SPAWN_FAILED"
    PROTOCOL_ERROR = "PROTOCOL_ERROR"
    FRAME_TOO_LARGE = "FRAME_TOO_LARGE"
    AGENT_ERROR = "AGENT_ERROR"


StopReason = Literal["end_turn", "error", "cancelled", "max_tokens", "refusal"]
Severity = Literal["fatal", "error", "warning"]
InteractionType = Literal["PERMISSION", "CONFIRM", "SELECT", "INPUT"]
Decision = Literal["allow", "deny"]
AgentState = Literal[
    "starting", "idle", "busy", "waiting_interaction", "compacting", "stopping", "stopped"
]
OutputType = Literal[
    "text",
    "file_content",
    "empty",
    "diff",
    "file_list",
    "web_content",
    "structured",
    "agent_result",
]
CloseReason = Literal["explicit", "agent_exit", "error"]
CompactionTrigger = Literal["auto", "manual"]
Mode = Literal["plan", "default"]
InteractionResult = Literal["allowed", "denied", "timed_out", "cancelled", "malformed"]
DecidedBy = Literal["master", "master_timeout", "deadline", "abort", "session_end", "agent"]
InputType = Literal["text", "command"]
Containment = Literal["cgroup", "subreaper", "tree-snapshot"]


# ------------------------------------------------------------ Client -> Master


class Features(Payload):
    """What this adapter and agent can do; the Master must treat a false or missing
    feature as unsupported."""

    model_config = _config("§17")

    adapter_type: Annotated[str, _doc("§17", "`process` or `sdk` (or a plugin's own type).")]
    context_compaction: Annotated[bool, _doc("§17", "Manual compaction is supported.")] = False
    plan_mode: Annotated[bool, _doc("§17", "`control.mode.switch` is supported.")] = False
    thinking: Annotated[bool, _doc("ours", "The agent may stream thinking.")] = False
    tool_events: Annotated[bool, _doc("ours", "Tool calls are reported as `tool.invoke.*`.")] = (
        False
    )
    permission_requests: Annotated[
        bool, _doc("ours", "Tool calls may be gated by `agent.interaction.request`.")
    ] = False
    abort: Annotated[bool, _doc("ours", "`control.prompt.abort` stops a running turn.")] = False
    single_turn_process: Annotated[
        bool, _doc("ours", "One agent process per prompt (§18); exit 0 ends the turn.")
    ] = False
    images: Annotated[bool, _doc("ours", "Prompts may carry images.")] = False
    process_containment: Annotated[
        Containment | None,
        _doc(
            "ours",
            "How the agent's processes are kept from outliving the session: `cgroup` (a "
            "cgroup v2 of its own), `subreaper` (orphans stay in the agent's tree), "
            "`tree-snapshot` (its recorded tree and environment marker). Absent for agents "
            "that are not OS processes, or before one runs.",
        ),
    ] = None


class AgentInfo(Payload):
    model_config = _config("ours")

    name: Annotated[str, _doc("ours", "The agent's name, e.g. `omp`.")]
    version: Annotated[str | None, _doc("ours", "The agent's version, when known.")] = None


class SessionCapabilities(Payload):
    """First frame of every session [§17.4]."""

    model_config = _config("§17")

    adapter_type: Annotated[str, _doc("ours", "Same as `features.adapter_type`.")]
    features: Annotated[Features, _doc("§17", "Feature flags.")]
    agent: Annotated[AgentInfo | None, _doc("ours", "The agent behind the adapter.")] = None


class TurnStart(Payload):
    model_config = _config("§17")

    turn_id: Annotated[str, _doc("ours", "New id for this turn (uuid4).")]
    prompt_id: Annotated[
        str | None, _doc("ours", "The `prompt_id` of the request that started it.")
    ] = None


class TokenUsage(Payload):
    model_config = _config("ours")

    input_tokens: Annotated[int | None, _doc("ours", "Prompt tokens.")] = None
    output_tokens: Annotated[int | None, _doc("ours", "Generated tokens.")] = None
    cache_read_tokens: Annotated[int | None, _doc("ours", "Tokens read from cache.")] = None
    cache_write_tokens: Annotated[int | None, _doc("ours", "Tokens written to cache.")] = None
    cost_usd: Annotated[float | None, _doc("ours", "Cost in US dollars, when known.")] = None


class TurnEnd(Payload):
    """Exactly one per `session.turn.start`, whatever happens [§17.2.2]."""

    model_config = _config("§17")

    turn_id: Annotated[str, _doc("ours", "The turn that ended.")]
    stop_reason: Annotated[
        StopReason, _doc("§17", "`end_turn` and `error` are §17; the others are ours.")
    ]
    usage: Annotated[TokenUsage | None, _doc("ours", "Usage of the whole turn.")] = None


class SessionError(Payload):
    """A problem with a control frame or the session, not with the agent."""

    model_config = _config("§17")

    error_code: Annotated[str, _doc("§17", "A `SessionErrorCode`.")]
    message: Annotated[str, _doc("ours", "Human-readable explanation.")]
    fatal: Annotated[bool, _doc("§17", "True when the session cannot go on.")]


class SessionUsage(TokenUsage):
    model_config = _config("1.0.0")

    turn_id: Annotated[str, _doc("ours", "The turn the usage belongs to.")]


class SessionCompacted(Payload):
    model_config = _config("1.0.0")

    trigger: Annotated[CompactionTrigger, _doc("1.0.0", "`auto` or `manual`.")]
    tokens_before: Annotated[int | None, _doc("ours", "Context size before compaction.")] = None
    summary: Annotated[str | None, _doc("ours", "The agent's summary, when given.")] = None


class SessionClosed(Payload):
    """The last frame of a session, sent once the agent (and its tools) are gone
    [§17.2.3; stands for the §7.5.3 cleanup frame]."""

    model_config = _config("ours")

    reason: Annotated[CloseReason, _doc("ours", "Why the session ended.")]
    exit_code: Annotated[int | None, _doc("ours", "The agent process's exit code.")] = None
    signal: Annotated[str | None, _doc("ours", "Signal name when killed by one.")] = None


class TextDelta(Payload):
    model_config = _config("TOC")

    turn_id: Annotated[str, _doc("ours", "The running turn.")]
    index: Annotated[int, _doc("ours", "Content block index within the turn.")]
    text: Annotated[str, _doc("ours", "The new text only.")]


class TextDone(Payload):
    model_config = _config("TOC")

    turn_id: Annotated[str, _doc("ours", "The running turn.")]
    index: Annotated[int, _doc("ours", "Content block index within the turn.")]
    text: Annotated[str, _doc("ours", "The full text of the block.")]


class ThinkingDelta(Payload):
    model_config = _config("TOC")

    turn_id: Annotated[str, _doc("ours", "The running turn.")]
    index: Annotated[int, _doc("ours", "Content block index within the turn.")]
    text: Annotated[str, _doc("1.0.0", "The new thinking text only.")]
    redacted: Annotated[
        bool, _doc("1.0.0", "Masked text; never show it as if it were the original.")
    ] = False


class ThinkingDone(Payload):
    model_config = _config("TOC")

    turn_id: Annotated[str, _doc("ours", "The running turn.")]
    index: Annotated[int, _doc("ours", "Content block index within the turn.")]
    text: Annotated[str, _doc("1.0.0", "The full thinking text of the block.")]
    redacted: Annotated[bool, _doc("1.0.0", "Masked text.")] = False


class InteractionContext(BaseModel):
    """What the interaction is about. Extra keys are kept."""

    model_config = ConfigDict(frozen=True, extra="allow", json_schema_extra={"x-source": "§17"})

    tool_name: Annotated[str | None, _doc("§17", "MUST for PERMISSION.")] = None
    tool_input: Annotated[dict[str, Any] | None, _doc("ours", "The tool's input.")] = None
    tool_call_id: Annotated[str | None, _doc("ours", "The agent's id for the tool call.")] = None


class InteractionRequest(Payload):
    model_config = _config("§17")

    interaction_id: Annotated[str, _doc("ours", "Id to answer with (uuid4).")]
    interaction_type: Annotated[InteractionType, _doc("§17", "PERMISSION is §17.")]
    timeout_ms: Annotated[
        int, _doc("ours", "The adapter denies on its own after this long."), Field(ge=0)
    ]
    turn_id: Annotated[str | None, _doc("ours", "The turn it belongs to, if any.")] = None
    title: Annotated[str | None, _doc("ours", "Short question.")] = None
    message: Annotated[str | None, _doc("ours", "Longer explanation.")] = None
    options: Annotated[list[str] | None, _doc("ours", "Choices for SELECT.")] = None
    context: Annotated[InteractionContext, _doc("§17", "Details; tool_name for PERMISSION.")] = (
        InteractionContext()
    )

    @model_validator(mode="after")
    def _permission_names_the_tool(self) -> InteractionRequest:
        if self.interaction_type == "PERMISSION" and not self.context.tool_name:
            raise ValueError("a PERMISSION interaction must carry context.tool_name (§17.3.1)")
        return self


class InteractionResolved(Payload):
    """How an interaction ended; exactly one per `agent.interaction.request`, before
    its turn ends [ours]."""

    model_config = _config("ours")

    interaction_id: Annotated[str, _doc("ours", "The request that was resolved.")]
    outcome: Annotated[
        InteractionResult,
        _doc("ours", "What the agent was told: only `allowed` lets it go ahead."),
    ]
    decided_by: Annotated[
        DecidedBy,
        _doc(
            "ours",
            "`master` (its answer), `master_timeout` (`control.interaction.timeout`), "
            "`deadline` (the request's `timeout_ms`), `abort`, `session_end`, or `agent` "
            "(it stopped asking).",
        ),
    ]
    turn_id: Annotated[str | None, _doc("ours", "The turn it belonged to, if any.")] = None


class AgentError(Payload):
    model_config = _config("TOC")

    severity: Annotated[Severity, _doc("§17", "`fatal` is §17; `error`/`warning` are ours.")]
    error_code: Annotated[str, _doc("§17", "An `AgentErrorCode`.")]
    message: Annotated[str, _doc("ours", "Human-readable explanation.")]
    exit_code: Annotated[int | None, _doc("ours", "Process exit code, when it exited.")] = None
    signal: Annotated[str | None, _doc("ours", "Signal name, e.g. SIGTERM.")] = None
    stderr_tail: Annotated[str | None, _doc("ours", "Last lines the agent wrote to stderr.")] = None


class AgentStateChanged(Payload):
    model_config = _config("TOC")

    state: Annotated[AgentState, _doc("ours", "The new state.")]


class ToolInvokeRequest(Payload):
    model_config = _config("1.0.0")

    invocation_id: Annotated[str, _doc("1.0.0", "The tool call's id.")]
    tool_name: Annotated[str, _doc("1.0.0", "The tool's name as the agent calls it.")]
    input: Annotated[dict[str, Any], _doc("1.0.0", "The tool's arguments.")]
    turn_id: Annotated[str | None, _doc("ours", "The running turn.")] = None


class ToolInvokeStream(Payload):
    model_config = _config("1.0.0")

    invocation_id: Annotated[str, _doc("1.0.0", "The tool call's id.")]
    output: Annotated[str, _doc("ours", "Only the new output, never the accumulated text.")]
    turn_id: Annotated[str | None, _doc("ours", "The running turn.")] = None


class ToolInvokeResult(Payload):
    model_config = _config("1.0.0")

    invocation_id: Annotated[str, _doc("1.0.0", "The tool call's id.")]
    output_type: Annotated[OutputType, _doc("1.0.0", "How to render `output`.")]
    output: Annotated[Any, _doc("ours", "The result: text, or a JSON value for `structured`.")] = (
        None
    )
    is_error: Annotated[bool, _doc("ours", "The tool failed.")] = False
    turn_id: Annotated[str | None, _doc("ours", "The running turn.")] = None


# ------------------------------------------------------------ Master -> Client


class ImageInput(Payload):
    model_config = _config("ours")

    media_type: Annotated[str, _doc("ours", "e.g. image/png.")]
    data: Annotated[str, _doc("ours", "Base64 data.")]


class PromptRequest(Payload):
    model_config = _config("CRS")

    prompt_id: Annotated[str, _doc("ours", "The Master's id for this prompt.")]
    input_type: Annotated[InputType, _doc("CRS", "`text` is CRS; `command` is ours.")] = "text"
    text: Annotated[str, _doc("ours", "The prompt, passed to the agent unchanged.")]
    images: Annotated[list[ImageInput] | None, _doc("ours", "Attached images.")] = None


class PromptAbort(Payload):
    model_config = _config("ours")

    turn_id: Annotated[
        str | None, _doc("ours", "The turn to abort; the running one if absent.")
    ] = None


class InteractionResponse(Payload):
    model_config = _config("§17")

    interaction_id: Annotated[str, _doc("ours", "The request being answered.")]
    decision: Annotated[Decision | None, _doc("ours", "For PERMISSION and CONFIRM.")] = None
    value: Annotated[
        str | None,
        _doc(
            "ours",
            "For SELECT and INPUT. With a PERMISSION allow: the edited tool input as JSON "
            "object text (an adapter that cannot use it denies).",
        ),
    ] = None


class InteractionTimeout(Payload):
    model_config = _config("§17")

    interaction_id: Annotated[str, _doc("ours", "The request that timed out: the agent gets deny.")]


class SessionCompact(Payload):
    model_config = _config("1.0.0")

    custom_instructions: Annotated[str | None, _doc("ours", "Guidance for the summary.")] = None


class ModeSwitch(Payload):
    model_config = _config("1.0.0")

    mode: Annotated[Mode, _doc("1.0.0", "`plan` or `default`.")]


class SessionEnd(Payload):
    model_config = _config("ours")

    reason: Annotated[str | None, _doc("ours", "Why the Master ends the session.")] = None


# ----------------------------------------------------------------- envelope


class DelegationLink(BaseModel):
    model_config = ConfigDict(frozen=True, json_schema_extra={"x-source": "1.0.0"})

    agent_id: Annotated[str, _doc("1.0.0", "The parent agent.")]
    invocation_id: Annotated[str, _doc("1.0.0", "The delegating tool call.")]


class FrameMetadata(BaseModel):
    """Envelope extension bag [1.0.0]. Unknown keys are kept."""

    model_config = ConfigDict(frozen=True, extra="allow", json_schema_extra={"x-source": "1.0.0"})

    delegation_chain: Annotated[
        list[DelegationLink] | None, _doc("1.0.0", "Sub-agent ancestry, outermost first.")
    ] = None


class Envelope(BaseModel):
    """Fields every frame has. ``type``/``payload``/``metadata`` are 1.0.0; the rest ours."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    version: Annotated[str, _doc("§17", "Protocol version, `rawp-dps-1.0`.")] = DPS_VERSION
    type: Annotated[str, _doc("1.0.0", "The frame type, e.g. `agent.text.delta`.")]
    session_id: Annotated[str, _doc("ours", "The session (uuid4).")]
    seq: Annotated[
        int, _doc("ours", "Per session and direction: 1, 2, 3… with no gaps."), Field(ge=1)
    ]
    timestamp: Annotated[str, _doc("ours", "RFC 3339 UTC with milliseconds and `Z`.")]
    metadata: Annotated[FrameMetadata | None, _doc("1.0.0", "Optional extensions.")] = None


def _frame_config(source: Source, direction: str) -> ConfigDict:
    return ConfigDict(
        frozen=True,
        extra="ignore",
        json_schema_extra={"x-source": source, "x-direction": direction},
    )


_C2M = "Client→Master"
_M2C = "Master→Client"


class SessionCapabilitiesFrame(Envelope):
    model_config = _frame_config("§17", _C2M)
    type: Literal["session.capabilities"] = "session.capabilities"
    payload: SessionCapabilities


class TurnStartFrame(Envelope):
    model_config = _frame_config("§17", _C2M)
    type: Literal["session.turn.start"] = "session.turn.start"
    payload: TurnStart


class TurnEndFrame(Envelope):
    model_config = _frame_config("§17", _C2M)
    type: Literal["session.turn.end"] = "session.turn.end"
    payload: TurnEnd


class SessionErrorFrame(Envelope):
    model_config = _frame_config("§17", _C2M)
    type: Literal["session.error"] = "session.error"
    payload: SessionError


class SessionUsageFrame(Envelope):
    model_config = _frame_config("1.0.0", _C2M)
    type: Literal["session.usage"] = "session.usage"
    payload: SessionUsage


class SessionCompactedFrame(Envelope):
    model_config = _frame_config("1.0.0", _C2M)
    type: Literal["session.compacted"] = "session.compacted"
    payload: SessionCompacted


class SessionClosedFrame(Envelope):
    model_config = _frame_config("ours", _C2M)
    type: Literal["session.closed"] = "session.closed"
    payload: SessionClosed


class TextDeltaFrame(Envelope):
    model_config = _frame_config("TOC", _C2M)
    type: Literal["agent.text.delta"] = "agent.text.delta"
    payload: TextDelta


class TextDoneFrame(Envelope):
    model_config = _frame_config("TOC", _C2M)
    type: Literal["agent.text.done"] = "agent.text.done"
    payload: TextDone


class ThinkingDeltaFrame(Envelope):
    model_config = _frame_config("TOC", _C2M)
    type: Literal["agent.thinking.delta"] = "agent.thinking.delta"
    payload: ThinkingDelta


class ThinkingDoneFrame(Envelope):
    model_config = _frame_config("TOC", _C2M)
    type: Literal["agent.thinking.done"] = "agent.thinking.done"
    payload: ThinkingDone


class InteractionRequestFrame(Envelope):
    model_config = _frame_config("§17", _C2M)
    type: Literal["agent.interaction.request"] = "agent.interaction.request"
    payload: InteractionRequest


class InteractionResolvedFrame(Envelope):
    model_config = _frame_config("ours", _C2M)
    type: Literal["agent.interaction.resolved"] = "agent.interaction.resolved"
    payload: InteractionResolved


class AgentErrorFrame(Envelope):
    model_config = _frame_config("§17", _C2M)
    type: Literal["agent.error"] = "agent.error"
    payload: AgentError


class AgentStateChangedFrame(Envelope):
    model_config = _frame_config("TOC", _C2M)
    type: Literal["agent.state.changed"] = "agent.state.changed"
    payload: AgentStateChanged


class ToolInvokeRequestFrame(Envelope):
    model_config = _frame_config("1.0.0", _C2M)
    type: Literal["tool.invoke.request"] = "tool.invoke.request"
    payload: ToolInvokeRequest


class ToolInvokeStreamFrame(Envelope):
    model_config = _frame_config("1.0.0", _C2M)
    type: Literal["tool.invoke.stream"] = "tool.invoke.stream"
    payload: ToolInvokeStream


class ToolInvokeResultFrame(Envelope):
    model_config = _frame_config("1.0.0", _C2M)
    type: Literal["tool.invoke.result"] = "tool.invoke.result"
    payload: ToolInvokeResult


class PromptRequestFrame(Envelope):
    model_config = _frame_config("CRS", _M2C)
    type: Literal["control.prompt.request"] = "control.prompt.request"
    payload: PromptRequest


class PromptAbortFrame(Envelope):
    model_config = _frame_config("ours", _M2C)
    type: Literal["control.prompt.abort"] = "control.prompt.abort"
    payload: PromptAbort


class InteractionResponseFrame(Envelope):
    model_config = _frame_config("§17", _M2C)
    type: Literal["control.interaction.response"] = "control.interaction.response"
    payload: InteractionResponse


class InteractionTimeoutFrame(Envelope):
    model_config = _frame_config("§17", _M2C)
    type: Literal["control.interaction.timeout"] = "control.interaction.timeout"
    payload: InteractionTimeout


class SessionCompactFrame(Envelope):
    model_config = _frame_config("1.0.0", _M2C)
    type: Literal["control.session.compact"] = "control.session.compact"
    payload: SessionCompact


class ModeSwitchFrame(Envelope):
    model_config = _frame_config("1.0.0", _M2C)
    type: Literal["control.mode.switch"] = "control.mode.switch"
    payload: ModeSwitch


class SessionEndFrame(Envelope):
    model_config = _frame_config("ours", _M2C)
    type: Literal["control.session.end"] = "control.session.end"
    payload: SessionEnd


ClientFrame = Union[  # noqa: UP007 - a Union keeps the discriminator readable
    SessionCapabilitiesFrame,
    TurnStartFrame,
    TurnEndFrame,
    SessionErrorFrame,
    SessionUsageFrame,
    SessionCompactedFrame,
    SessionClosedFrame,
    TextDeltaFrame,
    TextDoneFrame,
    ThinkingDeltaFrame,
    ThinkingDoneFrame,
    InteractionRequestFrame,
    InteractionResolvedFrame,
    AgentErrorFrame,
    AgentStateChangedFrame,
    ToolInvokeRequestFrame,
    ToolInvokeStreamFrame,
    ToolInvokeResultFrame,
]
"""Frames an adapter emits (Client → Master)."""

ControlFrame = Union[  # noqa: UP007
    PromptRequestFrame,
    PromptAbortFrame,
    InteractionResponseFrame,
    InteractionTimeoutFrame,
    SessionCompactFrame,
    ModeSwitchFrame,
    SessionEndFrame,
]
"""Frames an adapter consumes (Master → Client)."""

Frame = Annotated[Union[ClientFrame, ControlFrame], Field(discriminator="type")]  # noqa: UP007
"""Any known frame, discriminated on ``type``."""

ClientPayload = Union[  # noqa: UP007
    SessionCapabilities,
    TurnStart,
    TurnEnd,
    SessionError,
    SessionUsage,
    SessionCompacted,
    SessionClosed,
    TextDelta,
    TextDone,
    ThinkingDelta,
    ThinkingDone,
    InteractionRequest,
    InteractionResolved,
    AgentError,
    AgentStateChanged,
    ToolInvokeRequest,
    ToolInvokeStream,
    ToolInvokeResult,
]

ControlPayload = Union[  # noqa: UP007
    PromptRequest,
    PromptAbort,
    InteractionResponse,
    InteractionTimeout,
    SessionCompact,
    ModeSwitch,
    SessionEnd,
]


class UnknownFrame(Envelope):
    """A frame whose ``type`` this version does not know; kept whole so a relay
    can pass it on. Readers skip it rather than fail."""

    model_config = ConfigDict(frozen=True, extra="allow")

    type: str
    payload: dict[str, Any] = {}
