"""ACP ``session/update`` → DPS payloads, sans I/O (one :class:`Translator` per turn).

- ``agent_message_chunk`` / ``agent_thought_chunk`` (text content) → ``agent.text.delta``
  / ``agent.thinking.delta``; a block gets its ``done`` when a block of another kind (or a
  tool call) starts; the session runtime closes the block still open at the turn's end.
- ``tool_call`` → ``tool.invoke.request``; ``tool_call_update`` → ``tool.invoke.stream``
  (new tool output text) and, at ``completed`` / ``failed``, ``tool.invoke.result``. An
  update or permission request for a call never announced (gemini sends no
  ``tool_call``; omp and codex ask before they announce) announces it first.
- ``plan`` → ``agent.plan.updated`` with every entry (content, status; ACP's ``priority``
  has no DPS field).
- ``usage_update`` → remembered (``cost`` is the session's running total; a turn's cost is
  the difference); ``current_mode_update`` → the current mode; ``config_option_update`` →
  the current model and thinking level (the adapter's).
- ``available_commands_update``, ``session_info_update`` and ``user_message_chunk``
  (``session/load`` replays) have no DPS frame: they are logged and dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from acp import schema

from rawp_adapters.frames import (
    ClientPayload,
    PlanEntry,
    PlanUpdated,
    TextDelta,
    TextDone,
    ThinkingDelta,
    ThinkingDone,
    ToolInvokeRequest,
    ToolInvokeResult,
    ToolInvokeStream,
)


def tool_name(call: schema.ToolCallStart | schema.ToolCallProgress | schema.ToolCallUpdate) -> str:
    """The name a tool call is known by: the agent's own tool name when it says it
    (claude-agent-acp's ``_meta.claudeCode.toolName``), else the ACP ``kind``
    (``execute``, ``edit``, ``read``…), else ``tool``."""
    meta = call.field_meta or {}
    for value in meta.values():
        if isinstance(value, dict) and isinstance(value.get("toolName"), str):
            return str(value["toolName"])
    if call.kind:
        return str(call.kind)
    return "tool"


def tool_input(
    call: schema.ToolCallStart | schema.ToolCallProgress | schema.ToolCallUpdate,
) -> dict[str, Any]:
    raw = call.raw_input
    if isinstance(raw, dict):
        return dict(raw)
    if raw is not None:
        return {"input": raw}
    return {"title": call.title} if call.title else {}


def content_text(content: list[Any] | None) -> str:
    """The text of a tool call's content (text blocks, terminal refs skipped, diffs named)."""
    parts: list[str] = []
    for item in content or []:
        if isinstance(item, schema.ContentToolCallContent):
            block = item.content
            if isinstance(block, schema.TextContentBlock):
                parts.append(block.text)
        elif isinstance(item, schema.FileEditToolCallContent):
            parts.append(f"edited {item.path}")
    return "\n".join(parts)


def _raw_output_text(raw: Any) -> str | None:
    if raw is None:
        return None
    if isinstance(raw, str):
        return raw
    if isinstance(raw, dict):
        for key in ("output", "stdout", "content", "text"):
            if isinstance(raw.get(key), str):
                return str(raw[key])
    return None


@dataclass
class _Tool:
    name: str
    streamed: str = ""
    done: bool = False


@dataclass
class Translator:
    """One turn's translation state."""

    turn_id: str
    updates: int = 0
    """Updates seen in this turn (a stale answer has none)."""
    _kind: str | None = None
    _index: int = -1
    _text: list[str] = field(default_factory=list)
    _tools: dict[str, _Tool] = field(default_factory=dict)

    def _close_block(self) -> list[ClientPayload]:
        if self._kind is None:
            return []
        text = "".join(self._text)
        kind, self._kind, self._text = self._kind, None, []
        if kind == "text":
            return [TextDone(turn_id=self.turn_id, index=self._index, text=text)]
        return [ThinkingDone(turn_id=self.turn_id, index=self._index, text=text)]

    def _chunk(self, kind: str, text: str) -> list[ClientPayload]:
        out: list[ClientPayload] = []
        if self._kind != kind:
            out += self._close_block()
            self._kind = kind
            self._index += 1
        self._text.append(text)
        if kind == "text":
            out.append(TextDelta(turn_id=self.turn_id, index=self._index, text=text))
        else:
            out.append(ThinkingDelta(turn_id=self.turn_id, index=self._index, text=text))
        return out

    def announce(
        self, call: schema.ToolCallStart | schema.ToolCallProgress | schema.ToolCallUpdate
    ) -> list[ClientPayload]:
        """A ``tool.invoke.request`` for a call not announced yet."""
        if call.tool_call_id in self._tools:
            return []
        name = tool_name(call)
        self._tools[call.tool_call_id] = _Tool(name)
        return [
            *self._close_block(),
            ToolInvokeRequest(
                invocation_id=call.tool_call_id,
                tool_name=name,
                input=tool_input(call),
                turn_id=self.turn_id,
            ),
        ]

    def known_tool_name(self, call_id: str) -> str | None:
        tool = self._tools.get(call_id)
        return tool.name if tool is not None else None

    def update(self, update: object) -> list[ClientPayload]:
        self.updates += 1
        if isinstance(update, schema.AgentMessageChunk):
            if isinstance(update.content, schema.TextContentBlock):
                return self._chunk("text", update.content.text)
            return []
        if isinstance(update, schema.AgentThoughtChunk):
            if isinstance(update.content, schema.TextContentBlock):
                return self._chunk("thinking", update.content.text)
            return []
        if isinstance(update, schema.ToolCallStart | schema.ToolCallProgress):
            return self._tool_update(update)
        if isinstance(update, schema.AgentPlanUpdate):
            entries = [PlanEntry(content=e.content, status=e.status) for e in update.entries]
            return [PlanUpdated(entries=entries, turn_id=self.turn_id)]
        return []

    def _tool_update(
        self, call: schema.ToolCallStart | schema.ToolCallProgress
    ) -> list[ClientPayload]:
        out = self.announce(call)
        tool = self._tools[call.tool_call_id]
        if tool.done:
            return out
        text = content_text(call.content)
        if text and text != tool.streamed:
            new = text[len(tool.streamed) :] if text.startswith(tool.streamed) else text
            tool.streamed = text
            if call.status not in ("completed", "failed"):
                out.append(
                    ToolInvokeStream(
                        invocation_id=call.tool_call_id, output=new, turn_id=self.turn_id
                    )
                )
        if call.status in ("completed", "failed"):
            tool.done = True
            output = _raw_output_text(call.raw_output)
            if output is None:
                output = text or tool.streamed
            out.append(
                ToolInvokeResult(
                    invocation_id=call.tool_call_id,
                    output_type="text" if output else "empty",
                    output=output,
                    is_error=call.status == "failed",
                    turn_id=self.turn_id,
                )
            )
        return out
