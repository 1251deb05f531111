"""App-server notifications → DPS payloads, sans I/O (one :class:`Translator` per turn).

- ``item/agentMessage/delta`` → ``agent.text.delta``; ``item/reasoning/summaryTextDelta``
  and ``item/reasoning/textDelta`` → ``agent.thinking.delta``. A block is one item: it
  gets its ``done`` at the item's ``item/completed`` (or when another item's text
  starts). An item completed without deltas is sent whole, as one delta and its done.
- ``item/started`` of a tool item (``commandExecution``, ``fileChange``,
  ``mcpToolCall``, ``webSearch``) → ``tool.invoke.request`` named by :func:`tool_name`;
  ``item/commandExecution/outputDelta`` / ``item/fileChange/outputDelta`` →
  ``tool.invoke.stream``; its ``item/completed`` → ``tool.invoke.result`` (an error
  unless ``completed`` with exit code 0; ``declined`` when the Master said no).
- ``turn/plan/updated`` → ``agent.plan.updated`` with every step.
- A ``contextCompaction`` item completed in a turn (codex compacted on its own) →
  ``session.compacted`` ``auto``.
- An approval request → the ``PERMISSION`` question about its item (announced from the
  request when the item was not), answered by :func:`decision` in :func:`answer`'s
  shape. Codex asks whether an MCP tool may run as an MCP elicitation
  (``mcpServer/elicitation/request`` with ``_meta.codex_approval_kind: mcp_tool_call``),
  about the ``mcpToolCall`` item it started; an MCP server's own elicitation is declined.
- Token usage is the thread's running total; a turn's is the difference
  (:func:`turn_usage`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from rawp_adapter_codex._wire import (
    AgentMessageItem,
    CommandApprovalParams,
    CommandExecutionItem,
    DeltaNotification,
    FileChangeApprovalParams,
    FileChangeItem,
    ItemNotification,
    McpElicitationParams,
    McpToolCallItem,
    PlanNotification,
    ReasoningItem,
    TokenUsageBreakdown,
    ToolItem,
    WebSearchItem,
)
from rawp_adapters import InteractionOutcome, Question
from rawp_adapters.frames import (
    ClientPayload,
    PlanEntry,
    PlanStatus,
    PlanUpdated,
    SessionCompacted,
    StopReason,
    TextDelta,
    TextDone,
    ThinkingDelta,
    ThinkingDone,
    TokenUsage,
    ToolInvokeRequest,
    ToolInvokeResult,
    ToolInvokeStream,
)

COMMAND_APPROVAL = "item/commandExecution/requestApproval"
FILE_CHANGE_APPROVAL = "item/fileChange/requestApproval"
MCP_ELICITATION = "mcpServer/elicitation/request"
APPROVALS = (COMMAND_APPROVAL, FILE_CHANGE_APPROVAL, MCP_ELICITATION)
_MCP_TOOL_CALL = "mcp_tool_call"

BlockKind = Literal["text", "thinking"]

_TEXT_DELTAS: dict[str, BlockKind] = {
    "item/agentMessage/delta": "text",
    "item/reasoning/summaryTextDelta": "thinking",
    "item/reasoning/textDelta": "thinking",
}
_TOOL_DELTAS = ("item/commandExecution/outputDelta", "item/fileChange/outputDelta")
_PLAN_STATUS: dict[str, PlanStatus] = {
    "pending": "pending",
    "inProgress": "in_progress",
    "completed": "completed",
}
_STOP_REASONS: dict[str, StopReason] = {"completed": "end_turn", "interrupted": "cancelled"}


def tool_name(item: ToolItem) -> str:
    """The name a tool item is known by to the Master: the item's type
    (``commandExecution``, ``fileChange``, ``webSearch``), an MCP tool as
    ``<server>/<tool>``."""
    if isinstance(item, McpToolCallItem):
        return f"{item.server}/{item.tool}"
    return item.type


def tool_input(item: ToolItem) -> dict[str, Any]:
    if isinstance(item, CommandExecutionItem):
        return {"command": item.command, "cwd": item.cwd}
    if isinstance(item, FileChangeItem):
        changes = [{"path": c.path, "kind": c.kind.type, "diff": c.diff} for c in item.changes]
        return {"changes": changes}
    if isinstance(item, McpToolCallItem):
        return (
            dict(item.arguments) if isinstance(item.arguments, dict) else {"input": item.arguments}
        )
    return {"query": item.query}


def _result_text(item: ToolItem, streamed: str) -> str:
    if isinstance(item, CommandExecutionItem):
        return item.aggregated_output or streamed
    if isinstance(item, FileChangeItem):
        return "\n".join(f"{c.kind.type} {c.path}" for c in item.changes)
    if isinstance(item, McpToolCallItem):
        value = item.error if item.error is not None else item.result
        if value is None:
            return ""
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return ""


def _failed(item: ToolItem) -> bool:
    if isinstance(item, WebSearchItem):
        return False
    if isinstance(item, CommandExecutionItem) and item.exit_code not in (None, 0):
        return True
    if isinstance(item, McpToolCallItem) and item.error is not None:
        return True
    return item.status != "completed"


def decision(outcome: InteractionOutcome, *, aborting: bool) -> str:
    """``accept`` only on the Master's explicit allow of a turn that goes on; ``decline``
    for everything else (deny, timeout, abort, the session's end)."""
    return "accept" if outcome.allowed and not aborting else "decline"


def answer(method: str, decided: str) -> dict[str, Any]:
    """The response to the approval request ``method``: its ``decision``, or an
    elicitation's ``action`` (accepted with empty content: codex asks for no field)."""
    if method == MCP_ELICITATION:
        return {"action": "accept", "content": {}} if decided == "accept" else {"action": decided}
    return {"decision": decided}


def stop_reason(status: str) -> StopReason | None:
    """The stop reason of a turn that ended ``status``; None for ``failed``."""
    return _STOP_REASONS.get(status)


def turn_usage(
    before: TokenUsageBreakdown | None, after: TokenUsageBreakdown | None
) -> TokenUsage | None:
    """What the thread's total grew by in a turn (None when codex reported nothing)."""
    if after is None:
        return None
    base = before or TokenUsageBreakdown(
        input_tokens=0,
        cached_input_tokens=0,
        output_tokens=0,
        reasoning_output_tokens=0,
        total_tokens=0,
    )
    return TokenUsage(
        input_tokens=after.input_tokens - base.input_tokens,
        output_tokens=after.output_tokens - base.output_tokens,
        cache_read_tokens=after.cached_input_tokens - base.cached_input_tokens,
        cache_write_tokens=after.cache_write_input_tokens - base.cache_write_input_tokens,
    )


@dataclass
class _Block:
    kind: BlockKind
    item_id: str
    index: int
    parts: list[str] = field(default_factory=list)


@dataclass
class _Tool:
    name: str
    input: dict[str, Any]
    title: str | None
    streamed: list[str] = field(default_factory=list)
    """The output deltas (joined once, at the result)."""
    done: bool = False


@dataclass
class Translator:
    """One turn's translation state."""

    turn_id: str
    _block: _Block | None = None
    _index: int = -1
    _finished: set[str] = field(default_factory=set)
    """Items whose text block is done."""
    _tools: dict[str, _Tool] = field(default_factory=dict)

    # ------------------------------------------------------------ text and thinking

    def _close_block(self) -> list[ClientPayload]:
        block, self._block = self._block, None
        if block is None:
            return []
        self._finished.add(block.item_id)
        text = "".join(block.parts)
        if block.kind == "text":
            return [TextDone(turn_id=self.turn_id, index=block.index, text=text)]
        return [ThinkingDone(turn_id=self.turn_id, index=block.index, text=text)]

    def _delta(self, kind: BlockKind, item_id: str, text: str) -> list[ClientPayload]:
        out: list[ClientPayload] = []
        block = self._block
        if block is None or block.item_id != item_id or block.kind != kind:
            out += self._close_block()
            self._index += 1
            block = self._block = _Block(kind, item_id, self._index)
        block.parts.append(text)
        if kind == "text":
            out.append(TextDelta(turn_id=self.turn_id, index=block.index, text=text))
        else:
            out.append(ThinkingDelta(turn_id=self.turn_id, index=block.index, text=text))
        return out

    def _text_completed(self, kind: BlockKind, item_id: str, text: str) -> list[ClientPayload]:
        if self._block is not None and self._block.item_id == item_id:
            return self._close_block()
        if item_id in self._finished or not text:
            return []
        return [*self._delta(kind, item_id, text), *self._close_block()]

    # ------------------------------------------------------------ tools

    def _announce(self, item: ToolItem) -> list[ClientPayload]:
        if item.id in self._tools:
            return []
        title = item.command if isinstance(item, CommandExecutionItem) else None
        tool = _Tool(tool_name(item), tool_input(item), title)
        self._tools[item.id] = tool
        return [
            *self._close_block(),
            ToolInvokeRequest(
                invocation_id=item.id, tool_name=tool.name, input=tool.input, turn_id=self.turn_id
            ),
        ]

    def _tool_completed(self, item: ToolItem) -> list[ClientPayload]:
        out = self._announce(item)
        tool = self._tools[item.id]
        if tool.done:
            return out
        tool.done = True
        failed = _failed(item)
        output = _result_text(item, "".join(tool.streamed))
        if not output and failed and not isinstance(item, WebSearchItem):
            output = item.status  # "declined", "failed"
        out.append(
            ToolInvokeResult(
                invocation_id=item.id,
                output_type="text" if output else "empty",
                output=output or None,
                is_error=failed,
                turn_id=self.turn_id,
            )
        )
        return out

    def _tool_delta(self, note: DeltaNotification) -> list[ClientPayload]:
        tool = self._tools.get(note.item_id)
        if tool is None or tool.done or not note.delta:
            return []
        tool.streamed.append(note.delta)
        return [
            ToolInvokeStream(invocation_id=note.item_id, output=note.delta, turn_id=self.turn_id)
        ]

    # ------------------------------------------------------------ messages

    def notification(self, method: str, params: dict[str, Any]) -> list[ClientPayload]:
        """The payloads of one notification about this turn."""
        kind = _TEXT_DELTAS.get(method)
        if kind is not None:
            note = DeltaNotification.model_validate(params)
            return self._delta(kind, note.item_id, note.delta)
        if method in _TOOL_DELTAS:
            return self._tool_delta(DeltaNotification.model_validate(params))
        if method in ("item/started", "item/completed"):
            item = ItemNotification.model_validate(params).item
            completed = method == "item/completed"
            if isinstance(item, AgentMessageItem):
                return self._text_completed("text", item.id, item.text) if completed else []
            if isinstance(item, ReasoningItem):
                text = "\n".join(item.summary or item.content)
                return self._text_completed("thinking", item.id, text) if completed else []
            if isinstance(item, ToolItem):
                return self._tool_completed(item) if completed else self._announce(item)
            if completed and item.type == "contextCompaction":  # codex compacted on its own
                return [*self._close_block(), SessionCompacted(trigger="auto")]
            return []
        if method == "turn/plan/updated":
            plan = PlanNotification.model_validate(params)
            entries = [PlanEntry(content=s.step, status=_PLAN_STATUS[s.status]) for s in plan.plan]
            return [PlanUpdated(entries=entries, turn_id=self.turn_id)]
        return []

    def approval(
        self, method: str, params: dict[str, Any], *, timeout_ms: int | None
    ) -> tuple[list[ClientPayload], Question] | None:
        """An approval request: the payloads announcing its item if it was not, and the
        ``PERMISSION`` question about it; None for an elicitation about no MCP tool
        call of this turn (declined)."""
        if method == MCP_ELICITATION:
            return self._mcp_approval(McpElicitationParams.model_validate(params), timeout_ms)
        out: list[ClientPayload] = []
        request: CommandApprovalParams | FileChangeApprovalParams
        if method == COMMAND_APPROVAL:
            request = CommandApprovalParams.model_validate(params)
            if request.item_id not in self._tools:
                item: ToolItem = CommandExecutionItem(
                    type="commandExecution",
                    id=request.item_id,
                    command=request.command or "",
                    cwd=request.cwd or "",
                    status="inProgress",
                )
                out += self._announce(item)
        else:
            request = FileChangeApprovalParams.model_validate(params)
            if request.item_id not in self._tools:
                change = FileChangeItem(
                    type="fileChange", id=request.item_id, changes=[], status="inProgress"
                )
                out += self._announce(change)
        tool = self._tools[request.item_id]
        tool_input = dict(tool.input)
        if request.reason:
            tool_input["reason"] = request.reason
        question = Question.permission(
            tool.name,
            tool_input=tool_input,
            tool_call_id=request.item_id,
            turn_id=self.turn_id,
            title=tool.title,
            message=request.reason,
            timeout_ms=timeout_ms,
        )
        return out, question

    def _mcp_approval(
        self, request: McpElicitationParams, timeout_ms: int | None
    ) -> tuple[list[ClientPayload], Question] | None:
        """The question about the running ``mcpToolCall`` the elicitation asks to run
        (it names the server and tool, not the item)."""
        meta = request.meta
        if meta is None or meta.codex_approval_kind != _MCP_TOOL_CALL:
            return None
        name = f"{request.server_name}/{meta.tool_name}"
        for item_id, tool in self._tools.items():
            if tool.name == name and not tool.done:
                question = Question.permission(
                    tool.name,
                    tool_input=dict(tool.input),
                    tool_call_id=item_id,
                    turn_id=self.turn_id,
                    message=request.message or None,
                    timeout_ms=timeout_ms,
                )
                return [], question
        return None

    def finish(self) -> list[ClientPayload]:
        """What is still open when the turn ends (its last block's done)."""
        return self._close_block()
