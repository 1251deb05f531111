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

Every process that uses frames imports this module, a ``serve --stdio`` bridge at each
start, so its classes are cheap to define: annotations are objects, not strings pydantic
would evaluate one by one (no ``from __future__ import annotations``), and each model's
validator and serializer are built when it is first used (``defer_build``).
"""

from enum import StrEnum
from typing import Annotated, Any, Final, Literal, Self, Union

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.fields import FieldInfo

DPS_VERSION: Final = "rawp-dps-1.0"
"""The protocol version string, also the value of ``RAWP_DPS_VERSION`` [§17]."""

Source = Literal["§17", "1.0.0", "TOC", "CRS", "ours"]


def _doc(source: Source, description: str) -> FieldInfo:
    info: FieldInfo = Field(description=description, json_schema_extra={"x-source": source})
    return info


def _config(source: Source) -> ConfigDict:
    return ConfigDict(
        defer_build=True, frozen=True, extra="ignore", json_schema_extra={"x-source": source}
    )


class Payload(BaseModel):
    """Base of every frame payload. Unknown fields are ignored when reading."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="ignore")


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
    UNKNOWN_INVOCATION = "UNKNOWN_INVOCATION"
    INVALID_TOOL_CATALOG = "INVALID_TOOL_CATALOG"
    REJECTED = "REJECTED"


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
Executor = Literal["agent", "master"]
HostCallResolution = Literal[
    "answered", "invalid_input", "unknown_tool", "denied", "deadline", "cancelled", "session_end"
]
Delivery = Literal["steer", "follow_up"]
PlanStatus = Literal["pending", "in_progress", "completed"]


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
    host_tools: Annotated[
        bool,
        _doc("ours", "`tool.catalog.publish` reaches the agent; it may call the Master's tools."),
    ] = False
    steering: Annotated[
        bool, _doc("ours", "`control.prompt.steer` with `delivery: steer` reaches a running turn.")
    ] = False
    follow_up: Annotated[
        bool, _doc("ours", "`control.prompt.steer` with `delivery: follow_up` is queued.")
    ] = False
    model_change: Annotated[
        bool, _doc("ours", "`control.model.set` may change the model between turns.")
    ] = False
    thinking_change: Annotated[
        bool, _doc("ours", "`control.model.set` may change the thinking level.")
    ] = False
    model_list: Annotated[bool, _doc("ours", "`control.model.list` lists models.")] = False
    plans: Annotated[
        bool, _doc("ours", "The agent's plan updates come as `agent.plan.updated`.")
    ] = False
    plan_seeding: Annotated[bool, _doc("ours", "`control.plan.set` seeds the agent's plan.")] = (
        False
    )
    mcp_servers: Annotated[
        list[str],
        _doc(
            "ours",
            "The MCP servers of the session's settings (`mcp_servers`) the agent was given, "
            "by name; each one left out is named in an `agent.error` warning.",
        ),
    ] = []
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
    model: Annotated[str | None, _doc("ours", "The model it runs, when known.")] = None
    thinking_level: Annotated[
        str | None, _doc("ours", "Its thinking level, when the agent has one.")
    ] = None


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
    compacted: Annotated[
        bool,
        _doc(
            "ours",
            "False: the agent had nothing to compact (its context is empty, too small or "
            "just compacted) and left it as it was; the request is answered, not failed.",
        ),
    ] = True


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

    model_config = ConfigDict(
        defer_build=True, frozen=True, extra="allow", json_schema_extra={"x-source": "§17"}
    )

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
    def _permission_names_the_tool(self) -> Self:
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
    executor: Annotated[
        Executor | None,
        _doc(
            "ours",
            "`master`: a published host tool; the Master answers with `control.tool.result` "
            "(and may stream with `control.tool.stream`). Absent: the agent runs it.",
        ),
    ] = None
    timeout_ms: Annotated[
        int | None,
        _doc("ours", "For `executor: master`: the call fails on its own after this long."),
    ] = None


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
    resolution: Annotated[
        HostCallResolution | None,
        _doc(
            "ours",
            "For a host tool call: how it ended (`answered` by the Master, its input was "
            "invalid, the tool is not published, denied by the permission gate, its deadline, "
            "`cancelled` by an abort, `session_end`).",
        ),
    ] = None


class HostTool(BaseModel):
    """A tool the Master runs, as it publishes it [ours]."""

    model_config = ConfigDict(
        defer_build=True, frozen=True, extra="ignore", json_schema_extra={"x-source": "ours"}
    )

    name: Annotated[
        str,
        _doc("ours", "The name the agent calls it by."),
        Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_.-]+$"),
    ]
    description: Annotated[str, _doc("ours", "What it does, for the model.")] = ""
    input_schema: Annotated[
        dict[str, Any],
        _doc("ours", "JSON Schema (2020-12) of its input object; calls are checked against it."),
    ] = Field(default_factory=lambda: {"type": "object"})


class ToolCatalogUpdated(Payload):
    """The agent's answer to `tool.catalog.publish`: the host tools it now has [ours]."""

    model_config = _config("ours")

    tools: Annotated[list[str], _doc("ours", "Names of the published tools the agent sees.")]


class ModelInfo(BaseModel):
    model_config = ConfigDict(
        defer_build=True, frozen=True, extra="ignore", json_schema_extra={"x-source": "ours"}
    )

    id: Annotated[str, _doc("ours", "What `control.model.set` takes.")]
    name: Annotated[str | None, _doc("ours", "Display name.")] = None
    provider: Annotated[str | None, _doc("ours", "Who serves it.")] = None


class ModelChanged(Payload):
    """The agent's confirmation of `control.model.set` [ours]."""

    model_config = _config("ours")

    model: Annotated[str | None, _doc("ours", "The model now in use, when known.")] = None
    thinking_level: Annotated[str | None, _doc("ours", "The thinking level now in use.")] = None


class ModelList(Payload):
    """The answer to `control.model.list` [ours]."""

    model_config = _config("ours")

    models: Annotated[list[ModelInfo], _doc("ours", "Models the agent can switch to.")]
    current: Annotated[str | None, _doc("ours", "The model in use, when known.")] = None


class PlanEntry(BaseModel):
    model_config = ConfigDict(
        defer_build=True, frozen=True, extra="ignore", json_schema_extra={"x-source": "ours"}
    )

    content: Annotated[str, _doc("ours", "The step.")]
    status: Annotated[PlanStatus, _doc("ours", "`pending`, `in_progress` or `completed`.")] = (
        "pending"
    )
    phase: Annotated[
        str | None, _doc("ours", "The group it belongs to, when the agent has them.")
    ] = None


class PlanUpdated(Payload):
    """The agent's whole plan (todo list) after a change [ours; DPS 1.0.0 carries plan
    documents as text, see specs/dps-contract.md]."""

    model_config = _config("ours")

    entries: Annotated[list[PlanEntry], _doc("ours", "Every entry, in order.")]
    turn_id: Annotated[str | None, _doc("ours", "The turn that changed it, if any.")] = None


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


class ToolCatalogPublish(Payload):
    """The host tools of this session; replaces any earlier catalog [1.0.0 name]."""

    model_config = _config("1.0.0")

    tools: Annotated[list[HostTool], _doc("ours", "Every tool the agent may call; [] withdraws.")]


class ToolStream(Payload):
    """Output of a running host tool call, passed to the agent [ours]."""

    model_config = _config("ours")

    invocation_id: Annotated[str, _doc("ours", "The `tool.invoke.request` being answered.")]
    output: Annotated[str, _doc("ours", "Only the new output.")]


class ToolResult(Payload):
    """The one result of a host tool call [ours]."""

    model_config = _config("ours")

    invocation_id: Annotated[str, _doc("ours", "The `tool.invoke.request` being answered.")]
    output_type: Annotated[OutputType, _doc("1.0.0", "How to render `output`.")] = "text"
    output: Annotated[Any, _doc("ours", "Text, or a JSON value for `structured`.")] = None
    is_error: Annotated[bool, _doc("ours", "The tool failed; the agent is told so.")] = False


class PromptSteer(Payload):
    """A message for the running turn (`steer`) or for when it would stop (`follow_up`);
    either way inside the same turn [ours]."""

    model_config = _config("ours")

    prompt_id: Annotated[str, _doc("ours", "The Master's id for this message.")]
    text: Annotated[str, _doc("ours", "The message, passed to the agent unchanged.")]
    delivery: Annotated[Delivery, _doc("ours", "`steer` (now) or `follow_up` (after).")] = "steer"
    images: Annotated[list[ImageInput] | None, _doc("ours", "Attached images.")] = None
    turn_id: Annotated[
        str | None, _doc("ours", "The turn it is meant for; the running one if absent.")
    ] = None


class ModelSet(Payload):
    """Change the model and/or thinking level between turns [ours]."""

    model_config = _config("ours")

    model: Annotated[str | None, _doc("ours", "A model id (see `control.model.list`).")] = None
    thinking_level: Annotated[str | None, _doc("ours", "e.g. `off`, `low`, `high`.")] = None

    @model_validator(mode="after")
    def _names_something(self) -> Self:
        if self.model is None and self.thinking_level is None:
            raise ValueError("control.model.set needs a model or a thinking_level")
        return self


class ModelListRequest(Payload):
    model_config = _config("ours")


class PlanSet(Payload):
    """Replace the agent's plan (seed it before the first prompt) [ours]."""

    model_config = _config("ours")

    entries: Annotated[list[PlanEntry], _doc("ours", "The whole plan.")]


class SessionEnd(Payload):
    model_config = _config("ours")

    reason: Annotated[str | None, _doc("ours", "Why the Master ends the session.")] = None


# ----------------------------------------------------------------- envelope


class DelegationLink(BaseModel):
    model_config = ConfigDict(
        defer_build=True, frozen=True, json_schema_extra={"x-source": "1.0.0"}
    )

    agent_id: Annotated[str, _doc("1.0.0", "The parent agent.")]
    invocation_id: Annotated[str, _doc("1.0.0", "The delegating tool call.")]


class FrameMetadata(BaseModel):
    """Envelope extension bag [1.0.0]. Unknown keys are kept."""

    model_config = ConfigDict(
        defer_build=True, frozen=True, extra="allow", json_schema_extra={"x-source": "1.0.0"}
    )

    delegation_chain: Annotated[
        list[DelegationLink] | None, _doc("1.0.0", "Sub-agent ancestry, outermost first.")
    ] = None


class Envelope(BaseModel):
    """Fields every frame has. ``type``/``payload``/``metadata`` are 1.0.0; the rest ours."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="ignore")

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
        defer_build=True,
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


class ToolCatalogUpdatedFrame(Envelope):
    model_config = _frame_config("ours", _C2M)
    type: Literal["tool.catalog.updated"] = "tool.catalog.updated"
    payload: ToolCatalogUpdated


class ModelChangedFrame(Envelope):
    model_config = _frame_config("ours", _C2M)
    type: Literal["session.model.changed"] = "session.model.changed"
    payload: ModelChanged


class ModelListFrame(Envelope):
    model_config = _frame_config("ours", _C2M)
    type: Literal["session.models"] = "session.models"
    payload: ModelList


class PlanUpdatedFrame(Envelope):
    model_config = _frame_config("ours", _C2M)
    type: Literal["agent.plan.updated"] = "agent.plan.updated"
    payload: PlanUpdated


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


class ToolCatalogPublishFrame(Envelope):
    model_config = _frame_config("1.0.0", _M2C)
    type: Literal["tool.catalog.publish"] = "tool.catalog.publish"
    payload: ToolCatalogPublish


class ToolStreamFrame(Envelope):
    model_config = _frame_config("ours", _M2C)
    type: Literal["control.tool.stream"] = "control.tool.stream"
    payload: ToolStream


class ToolResultFrame(Envelope):
    model_config = _frame_config("ours", _M2C)
    type: Literal["control.tool.result"] = "control.tool.result"
    payload: ToolResult


class PromptSteerFrame(Envelope):
    model_config = _frame_config("ours", _M2C)
    type: Literal["control.prompt.steer"] = "control.prompt.steer"
    payload: PromptSteer


class ModelSetFrame(Envelope):
    model_config = _frame_config("ours", _M2C)
    type: Literal["control.model.set"] = "control.model.set"
    payload: ModelSet


class ModelListRequestFrame(Envelope):
    model_config = _frame_config("ours", _M2C)
    type: Literal["control.model.list"] = "control.model.list"
    payload: ModelListRequest = ModelListRequest()


class PlanSetFrame(Envelope):
    model_config = _frame_config("ours", _M2C)
    type: Literal["control.plan.set"] = "control.plan.set"
    payload: PlanSet


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
    ToolCatalogUpdatedFrame,
    ModelChangedFrame,
    ModelListFrame,
    PlanUpdatedFrame,
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
    ToolCatalogPublishFrame,
    ToolStreamFrame,
    ToolResultFrame,
    PromptSteerFrame,
    ModelSetFrame,
    ModelListRequestFrame,
    PlanSetFrame,
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
    ToolCatalogUpdated,
    ModelChanged,
    ModelList,
    PlanUpdated,
]

ControlPayload = Union[  # noqa: UP007
    PromptRequest,
    PromptAbort,
    InteractionResponse,
    InteractionTimeout,
    SessionCompact,
    ModeSwitch,
    SessionEnd,
    ToolCatalogPublish,
    ToolStream,
    ToolResult,
    PromptSteer,
    ModelSet,
    ModelListRequest,
    PlanSet,
]


class UnknownFrame(Envelope):
    """A frame whose ``type`` this version does not know; kept whole so a relay
    can pass it on. Readers skip it rather than fail."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="allow")

    type: str
    payload: dict[str, Any] = {}
