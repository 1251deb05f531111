"""The app-server messages the adapter reads, as pydantic models: a curated subset of
the JSON Schema the pinned binary prints (``codex app-server generate-json-schema --out
DIR``, file ``codex_app_server_protocol.v2.schemas.json``), each model named after its
schema definition (:data:`SCHEMA_NAMES`). ``tests/codex/test_wire_schema.py`` checks
every field against the schema of the installed binary: after a version bump, run it and
follow what it reports. Unknown fields are ignored (the protocol grows), and the
messages the adapter sends are plain dicts built in ``_adapter``.

The wire is JSON-RPC 2.0 without the ``"jsonrpc"`` member, one message per line.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel


class _Wire(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")


# ------------------------------------------------------------------ responses


class InitializeResponse(_Wire):
    user_agent: str = ""
    """``<clientInfo.name>/<codex version> (<os>) …``."""


class ThreadRef(_Wire):
    id: str


class ThreadStartResponse(_Wire):
    """Also ``thread/resume``'s answer (``ThreadResumeResponse``, the same fields)."""

    thread: ThreadRef
    model: str
    reasoning_effort: str | None = None


class TurnRef(_Wire):
    id: str


class TurnStartResponse(_Wire):
    turn: TurnRef


class ReasoningEffortOption(_Wire):
    reasoning_effort: str


class Model(_Wire):
    id: str
    display_name: str = ""
    hidden: bool = False
    supported_reasoning_efforts: list[ReasoningEffortOption] = Field(default_factory=list)


class ModelListResponse(_Wire):
    data: list[Model]
    next_cursor: str | None = None


# ------------------------------------------------------------------ thread items


class AgentMessageItem(_Wire):
    type: Literal["agentMessage"]
    id: str
    text: str


class ReasoningItem(_Wire):
    type: Literal["reasoning"]
    id: str
    summary: list[str] = Field(default_factory=list)
    content: list[str] = Field(default_factory=list)


class CommandExecutionItem(_Wire):
    type: Literal["commandExecution"]
    id: str
    command: str
    cwd: str
    status: str
    """``inProgress``, ``completed``, ``failed`` or ``declined``."""
    aggregated_output: str | None = None
    exit_code: int | None = None


class PatchChangeKind(_Wire):
    type: str
    """``add``, ``delete`` or ``update``."""


class FileUpdateChange(_Wire):
    path: str
    kind: PatchChangeKind
    diff: str


class FileChangeItem(_Wire):
    type: Literal["fileChange"]
    id: str
    changes: list[FileUpdateChange]
    status: str


class McpToolCallItem(_Wire):
    type: Literal["mcpToolCall"]
    id: str
    server: str
    tool: str
    arguments: Any = None
    status: str
    result: Any = None
    error: Any = None


class WebSearchItem(_Wire):
    type: Literal["webSearch"]
    id: str
    query: str


class OtherItem(_Wire):
    """Any other item (user messages, plans, images, reviews, …): no DPS frame."""

    type: str
    id: str


ToolItem = CommandExecutionItem | FileChangeItem | McpToolCallItem | WebSearchItem
ThreadItem = AgentMessageItem | ReasoningItem | ToolItem | OtherItem


class ItemNotification(_Wire):
    """``item/started`` (ItemStartedNotification) and ``item/completed``."""

    turn_id: str
    item: Annotated[ThreadItem, Field(union_mode="left_to_right")]


# ------------------------------------------------------------------ notifications


class DeltaNotification(_Wire):
    """``item/agentMessage/delta``, ``item/reasoning/summaryTextDelta``,
    ``item/reasoning/textDelta``, ``item/commandExecution/outputDelta``,
    ``item/fileChange/outputDelta``: the same three fields."""

    turn_id: str
    item_id: str
    delta: str


class TurnError(_Wire):
    message: str
    additional_details: str | None = None


class TurnInfo(_Wire):
    id: str
    status: str
    """``completed``, ``interrupted``, ``failed`` or ``inProgress``."""
    error: TurnError | None = None


class TurnNotification(_Wire):
    """``turn/started`` and ``turn/completed``."""

    turn: TurnInfo


class TokenUsageBreakdown(_Wire):
    input_tokens: int
    cached_input_tokens: int
    cache_write_input_tokens: int = 0
    output_tokens: int
    reasoning_output_tokens: int
    total_tokens: int


class ThreadTokenUsage(_Wire):
    total: TokenUsageBreakdown
    last: TokenUsageBreakdown


class TokenUsageNotification(_Wire):
    turn_id: str
    token_usage: ThreadTokenUsage


class TurnPlanStep(_Wire):
    step: str
    status: Literal["pending", "inProgress", "completed"]


class PlanNotification(_Wire):
    turn_id: str
    plan: list[TurnPlanStep]


class ErrorNotification(_Wire):
    turn_id: str
    error: TurnError
    will_retry: bool


# ------------------------------------------------------------------ server requests


class CommandApprovalParams(_Wire):
    """``item/commandExecution/requestApproval``."""

    turn_id: str
    item_id: str
    command: str | None = None
    cwd: str | None = None
    reason: str | None = None


class FileChangeApprovalParams(_Wire):
    """``item/fileChange/requestApproval``."""

    turn_id: str
    item_id: str
    reason: str | None = None
    grant_root: str | None = None


class McpToolApproval(_Wire):
    """What codex puts in ``_meta`` of an elicitation that asks to run an MCP tool."""

    codex_approval_kind: str | None = Field(default=None, alias="codex_approval_kind")
    tool_name: str | None = Field(default=None, alias="tool_name")


class McpElicitationParams(_Wire):
    """``mcpServer/elicitation/request``: an MCP server's question, or codex asking
    whether an MCP tool may run (``_meta.codex_approval_kind: mcp_tool_call``)."""

    server_name: str
    turn_id: str | None = None
    message: str = ""
    meta: McpToolApproval | None = Field(default=None, alias="_meta")


class McpServerStatusNotification(_Wire):
    """``mcpServer/startupStatus/updated``."""

    name: str
    status: Literal["starting", "ready", "failed", "cancelled"]
    error: str | None = None


SCHEMA_NAMES: dict[type[_Wire], str] = {
    InitializeResponse: "InitializeResponse",
    ThreadStartResponse: "ThreadStartResponse",
    TurnStartResponse: "TurnStartResponse",
    Model: "Model",
    ReasoningEffortOption: "ReasoningEffortOption",
    ModelListResponse: "ModelListResponse",
    FileUpdateChange: "FileUpdateChange",
    ItemNotification: "ItemStartedNotification",
    DeltaNotification: "AgentMessageDeltaNotification",
    TurnError: "TurnError",
    TurnInfo: "Turn",
    TurnNotification: "TurnCompletedNotification",
    TokenUsageBreakdown: "TokenUsageBreakdown",
    ThreadTokenUsage: "ThreadTokenUsage",
    TokenUsageNotification: "ThreadTokenUsageUpdatedNotification",
    TurnPlanStep: "TurnPlanStep",
    PlanNotification: "TurnPlanUpdatedNotification",
    ErrorNotification: "ErrorNotification",
    CommandApprovalParams: "CommandExecutionRequestApprovalParams",
    FileChangeApprovalParams: "FileChangeRequestApprovalParams",
    McpElicitationParams: "McpServerElicitationRequestParams",
    McpServerStatusNotification: "McpServerStatusUpdatedNotification",
}
"""Each model and the schema definition it is checked against (thread items are checked
as the ``ThreadItem`` variant of their ``type``)."""
