"""Claude Agent SDK messages → core events for one turn (sans-IO).

- Partial stream events (``include_partial_messages``) give the text and thinking
  deltas; ``content_block_stop`` completes a block. Block indexes restart with every
  model call, so each block gets the next index of the turn.
- ``AssistantMessage`` gives the tool calls (``ToolUseBlock``, whole input) and the
  text of messages that were not streamed; one with ``error`` set is the SDK's
  synthetic API-error message.
- ``UserMessage`` tool results end the tool calls.
- ``ResultMessage`` gives usage (its ``total_cost_usd`` counts the whole session, so
  the turn's cost is the difference) and the outcome. ``is_error`` with subtype
  ``success`` is an API error; ``aborted_*`` terminal reasons are an interrupt.

Text of sub-agents (stream events with ``parent_tool_use_id``) is left out; their tool
calls are reported. Calls of the Master's tools (``mcp__rawp__*``) are left out: the
host call reports them. Task-list tools that succeeded change the :class:`ClaudePlan`.

``/compact`` has its own reader, :class:`ClaudeCompaction`.
"""

from __future__ import annotations

import re
from typing import Any

from claude_agent_sdk import (
    AssistantMessage,
    ResultMessage,
    SystemMessage,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)
from claude_agent_sdk.types import StreamEvent

from rawp_adapter_sdk._core import Compaction, CoreError
from rawp_adapter_sdk.cores._claude_host_tools import host_tool_name
from rawp_adapter_sdk.events import (
    CoreEvent,
    PlanChanged,
    Stopped,
    TextChunk,
    TextEnd,
    ThinkingChunk,
    ThinkingEnd,
    ToolFinished,
    ToolStarted,
    UsageReport,
)
from rawp_adapters.frames import PlanEntry, PlanStatus, StopReason

_ABORTED = frozenset({"aborted_tools", "aborted_streaming"})
_STOP_REASONS: dict[str | None, StopReason] = {"max_tokens": "max_tokens", "refusal": "refusal"}


class _Block:
    __slots__ = ("index", "parts", "redacted", "thinking")

    def __init__(self, index: int, *, thinking: bool, redacted: bool = False) -> None:
        self.index = index
        self.thinking = thinking
        self.redacted = redacted
        self.parts: list[str] = []


_PLAN_STATUSES: dict[object, PlanStatus] = {
    "pending": "pending",
    "in_progress": "in_progress",
    "completed": "completed",
}


class ClaudePlan:
    """The agent's task list, kept for the session from its task tools' results:
    ``TaskCreate`` adds one (``{"task": {"id", "subject"}}``), ``TaskUpdate`` changes one
    (status ``deleted`` removes it), ``TaskList`` says them all, ``TodoWrite`` (older CLIs)
    replaces them from its input."""

    def __init__(self) -> None:
        self._tasks: dict[str, PlanEntry] = {}

    def apply(self, tool_name: str, tool_input: dict[str, Any], result: Any) -> bool:
        """Take a task tool's successful call; True when the plan changed."""
        before = list(self._tasks.items())
        match tool_name:
            case "TaskCreate" if isinstance(result, dict):
                task = result.get("task") or {}
                if "id" in task:
                    self._tasks[str(task["id"])] = PlanEntry(content=str(task.get("subject", "")))
            case "TaskUpdate":
                self._update(str(tool_input.get("taskId", "")), tool_input)
            case "TaskList" if isinstance(result, dict):
                self._tasks = {
                    str(task.get("id")): PlanEntry(
                        content=str(task.get("subject", "")),
                        status=_PLAN_STATUSES.get(task.get("status"), "pending"),
                    )
                    for task in result.get("tasks") or []
                    if isinstance(task, dict)
                }
            case "TodoWrite":
                self._tasks = {
                    str(n): PlanEntry(
                        content=str(todo.get("content", "")),
                        status=_PLAN_STATUSES.get(todo.get("status"), "pending"),
                    )
                    for n, todo in enumerate(tool_input.get("todos") or [])
                    if isinstance(todo, dict)
                }
        return list(self._tasks.items()) != before

    @property
    def entries(self) -> list[PlanEntry]:
        return list(self._tasks.values())

    def _update(self, task_id: str, change: dict[str, Any]) -> None:
        entry = self._tasks.get(task_id)
        if entry is None:
            return
        if change.get("status") == "deleted":
            del self._tasks[task_id]
            return
        content = change.get("subject")
        self._tasks[task_id] = PlanEntry(
            content=content if isinstance(content, str) else entry.content,
            status=_PLAN_STATUSES.get(change.get("status"), entry.status),
        )


class ClaudeTurnTranslator:
    """Feed it every message of one turn; after the ``ResultMessage`` it is
    :attr:`finished`, and :attr:`error` is set if the turn failed."""

    def __init__(self, session_cost_before: float | None, plan: ClaudePlan | None = None) -> None:
        self.finished = False
        self.error: CoreError | None = None
        self.cancel_requested = False
        self._cost_before = session_cost_before
        self._next_index = 0
        self._blocks: dict[int, _Block] = {}
        self._streamed_messages: set[str] = set()
        self._api_error_text: str | None = None
        self._last_stop_reason: str | None = None
        self._plan = plan if plan is not None else ClaudePlan()
        """The session's task list, which this turn's task tools change."""
        self._calls: dict[str, tuple[str, dict[str, Any]]] = {}
        self._host_calls: set[str] = set()

    def feed(self, message: object) -> list[CoreEvent]:
        match message:
            case StreamEvent():
                if message.parent_tool_use_id is not None:
                    return []
                return self._stream_event(message.event)
            case AssistantMessage():
                return self._assistant(message)
            case UserMessage():
                return self._tool_results(message)
            case ResultMessage():
                return self._result(message)
        return []

    # ------------------------------------------------------------ partial stream

    def _stream_event(self, event: dict[str, Any]) -> list[CoreEvent]:
        kind = event.get("type")
        if kind == "content_block_delta":
            block = self._blocks.get(event.get("index", -1))
            delta = event.get("delta") or {}
            if block is None:
                return []
            text = delta.get("thinking") if block.thinking else delta.get("text")
            if not isinstance(text, str) or not text:
                return []
            block.parts.append(text)
            if block.thinking:
                return [ThinkingChunk(block.index, text, block.redacted)]
            return [TextChunk(block.index, text)]
        if kind == "content_block_start":
            content = event.get("content_block") or {}
            content_type = content.get("type")
            if content_type in ("text", "thinking", "redacted_thinking"):
                self._blocks[event.get("index", -1)] = _Block(
                    self._take_index(),
                    thinking=content_type != "text",
                    redacted=content_type == "redacted_thinking",
                )
            return []
        if kind == "content_block_stop":
            block = self._blocks.pop(event.get("index", -1), None)
            if block is None:
                return []
            text = "".join(block.parts)
            if block.thinking:
                return [ThinkingEnd(block.index, text, block.redacted)]
            return [TextEnd(block.index, text)]
        if kind == "message_start":
            self._blocks.clear()
            message_id = (event.get("message") or {}).get("id")
            if isinstance(message_id, str):
                self._streamed_messages.add(message_id)
        elif kind == "message_delta":
            self._last_stop_reason = (event.get("delta") or {}).get("stop_reason")
        return []

    def _take_index(self) -> int:
        index = self._next_index
        self._next_index += 1
        return index

    # ------------------------------------------------------------ whole messages

    def _assistant(self, message: AssistantMessage) -> list[CoreEvent]:
        if message.error is not None:
            texts = [b.text for b in message.content if isinstance(b, TextBlock)]
            self._api_error_text = " ".join(texts) or message.error
            return []
        streamed = message.message_id in self._streamed_messages
        events: list[CoreEvent] = []
        for block in message.content:
            if isinstance(block, ToolUseBlock):
                if host_tool_name(block.name) is not None:
                    self._host_calls.add(block.id)
                    continue
                if message.parent_tool_use_id is None:
                    self._calls[block.id] = (block.name, block.input)
                events.append(
                    ToolStarted(call_id=block.id, tool_name=block.name, input=block.input)
                )
            elif streamed or message.parent_tool_use_id is not None:
                continue
            elif isinstance(block, TextBlock):
                index = self._take_index()
                events += [TextChunk(index, block.text), TextEnd(index, block.text)]
            elif isinstance(block, ThinkingBlock):
                index = self._take_index()
                events += [
                    ThinkingChunk(index, block.thinking),
                    ThinkingEnd(index, block.thinking),
                ]
        return events

    def _tool_results(self, message: UserMessage) -> list[CoreEvent]:
        if isinstance(message.content, str):
            return []
        events: list[CoreEvent] = []
        for block in message.content:
            if isinstance(block, ToolResultBlock):
                if block.tool_use_id in self._host_calls:
                    continue
                output = _result_text(block.content)
                events.append(
                    ToolFinished(
                        call_id=block.tool_use_id,
                        output=output,
                        is_error=bool(block.is_error),
                        output_type="text" if output else "empty",
                    )
                )
                call = self._calls.pop(block.tool_use_id, None)
                if call is not None and not block.is_error:
                    events += self._plan_change(*call, message.tool_use_result)
        return events

    def _plan_change(
        self, tool_name: str, tool_input: dict[str, Any], result: Any
    ) -> list[CoreEvent]:
        if self._plan.apply(tool_name, tool_input, result):
            return [PlanChanged(self._plan.entries)]
        return []

    def _result(self, message: ResultMessage) -> list[CoreEvent]:
        self.finished = True
        events: list[CoreEvent] = []
        usage = self._usage(message)
        if usage is not None:
            events.append(usage)
        aborted = message.terminal_reason in _ABORTED or (
            self.cancel_requested and message.subtype == "error_during_execution"
        )
        if aborted:
            events.append(Stopped("cancelled"))
        elif message.is_error or message.subtype != "success":
            self.error = CoreError(self._failure_text(message))
        else:
            stop_reason = message.stop_reason or self._last_stop_reason
            events.append(Stopped(_STOP_REASONS.get(stop_reason, "end_turn")))
        return events

    def _usage(self, message: ResultMessage) -> UsageReport | None:
        raw = message.usage or {}
        total = message.total_cost_usd
        cost = None
        if total is not None:
            cost = max(0.0, total - (self._cost_before or 0.0))
        if not raw and cost is None:
            return None
        return UsageReport(
            input_tokens=_int(raw.get("input_tokens")),
            output_tokens=_int(raw.get("output_tokens")),
            cache_read_tokens=_int(raw.get("cache_read_input_tokens")),
            cache_write_tokens=_int(raw.get("cache_creation_input_tokens")),
            cost_usd=cost,
        )

    def _failure_text(self, message: ResultMessage) -> str:
        if message.subtype == "error_max_turns":
            return "Claude stopped at its max_turns limit before finishing."
        text = self._api_error_text or "; ".join(message.errors or []) or message.result
        text = text or f"the turn failed ({message.subtype})"
        if message.api_error_status is not None and str(message.api_error_status) not in text:
            text = f"{text} (HTTP {message.api_error_status})"
        return text


_SUMMARY_RE = re.compile(
    r"^Summary:\n(.*?)(?=\n\nIf you need specific details|\Z)", re.DOTALL | re.MULTILINE
)
_NOTHING_TO_COMPACT = ("No messages to compact", "Not enough messages to compact")
"""How the CLI says a ``/compact`` had nothing to do (an empty conversation)."""
_REMINDER_RE = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)


class ClaudeCompaction:
    """Feed it every message the CLI sends for ``/compact``; :meth:`outcome` then says
    what it did.

    A compaction that happened sends a ``compact_boundary`` system message (with the
    context size before it), then the user message that now opens the conversation (the
    CLI's preamble around ``Summary:`` and the model's summary). One that did not happen
    sends a ``status`` message with ``compact_error``, or just a synthetic assistant text
    (e.g. "Error: No messages to compact"); one with nothing to compact is not a failure.
    """

    def __init__(self) -> None:
        self._boundary: dict[str, Any] | None = None
        self._summary: str | None = None
        self._said: list[str] = []
        self._error: str | None = None

    def feed(self, message: object) -> None:
        match message:
            case SystemMessage(subtype="compact_boundary"):
                metadata = message.data.get("compact_metadata")
                self._boundary = metadata if isinstance(metadata, dict) else {}
            case SystemMessage(subtype="status"):
                error = message.data.get("compact_error")
                if isinstance(error, str) and error:
                    self._error = error
            case UserMessage(content=str() as content) if (
                self._boundary is not None and self._summary is None
            ):
                self._summary = _summary(content)
            case AssistantMessage():
                self._said += [b.text for b in message.content if isinstance(b, TextBlock)]
            case ResultMessage(is_error=True):
                self._error = self._error or "; ".join(message.errors or []) or message.result

    def outcome(self) -> Compaction:
        """What the compaction did; raises :class:`CoreError` if it failed."""
        if self._boundary is None or self._error is not None:
            reason = self._error or " ".join(self._said) or "no compaction was reported"
            if any(words in reason for words in _NOTHING_TO_COMPACT):
                return Compaction(compacted=False)
            raise CoreError(f"the Claude Code CLI did not compact the conversation: {reason}")
        return Compaction(
            tokens_before=_int(self._boundary.get("pre_tokens")), summary=self._summary
        )


def _summary(text: str) -> str:
    """The model's summary from the CLI's message that opens a compacted conversation
    (all of it, reminders removed, if its wording is not the expected one)."""
    match = _SUMMARY_RE.search(text)
    return (match.group(1) if match else _REMINDER_RE.sub("", text)).strip()


def _result_text(content: str | list[dict[str, Any]] | None) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(str(part.get("text", "")) for part in content if part.get("type") == "text")


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
