"""ACP ``session/update`` → DPS payloads, sans I/O (one :class:`Translator` per turn).

- ``agent_message_chunk`` / ``agent_thought_chunk`` (text content) → ``agent.text.delta``
  / ``agent.thinking.delta``; a block gets its ``done`` when a block of another kind (or a
  tool call) starts; the session runtime closes the block still open at the turn's end.
- ``tool_call`` → ``tool.invoke.request``; ``tool_call_update`` → ``tool.invoke.stream``
  (new tool output text) and, at ``completed`` / ``failed``, ``tool.invoke.result``. An
  update or permission request for a call never announced (gemini sends no
  ``tool_call``; omp and codex ask before they announce) announces it first.
- A call is named once, by the message that announces it (:func:`tool_name`), and the
  permission question uses that name (:meth:`Translator.question`). claude-agent-acp names
  its tools only in its session updates, and its permission request may overtake the
  ``tool_call``: with ``waits_for_announcement`` such a request waits for it
  (:meth:`Translator.permission`), so the name does not depend on which came first.
- A call of a tool of the session's ``rawp`` MCP server (the Master's host tools) is the
  agent's side of a host call that the session runtime reports itself: it has no frames
  here, and the agent's permission question about it is allowed without asking the
  Master (:func:`relays_host_call`).
- ``plan`` → ``agent.plan.updated`` with every entry (content, status; ACP's ``priority``
  has no DPS field).
- ``usage_update`` → remembered (``cost`` is the session's running total; a turn's cost is
  the difference); ``current_mode_update`` → the current mode; ``config_option_update`` →
  the current model and thinking level (the adapter's).
- ``available_commands_update``, ``session_info_update`` and ``user_message_chunk``
  (``session/load`` replays) have no DPS frame: they are logged and dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from acp import schema

from rawp_adapters import Question
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

ToolCall = schema.ToolCallStart | schema.ToolCallProgress | schema.ToolCallUpdate


def own_tool_name(call: ToolCall) -> str | None:
    """The agent's own name of the tool, when this message says it: qwen-code's
    ``_meta.toolName``, claude-agent-acp's ``_meta.claudeCode.toolName``."""
    meta = call.field_meta or {}
    if isinstance(meta.get("toolName"), str):
        return str(meta["toolName"])
    for value in meta.values():
        if isinstance(value, dict) and isinstance(value.get("toolName"), str):
            return str(value["toolName"])
    return None


SERVER_NAME = "rawp"
"""The name of the session's MCP server of the Master's host tools."""
_RELAYED_NAME = re.compile(
    rf"(?:mcp__{SERVER_NAME}__|mcp_{SERVER_NAME}_|mcp\.{SERVER_NAME}\.|{SERVER_NAME}[_/-])\S+"
    rf"|\S+ \({SERVER_NAME} MCP Server\)"
)
"""How agents name a tool of that server: claude-agent-acp and qwen-code
``mcp__rawp__<tool>``, gemini-cli ``mcp_rawp_<tool>`` (its title ``<tool> (rawp MCP
Server)``), codex-acp ``mcp.rawp.<tool>``, opencode ``rawp_<tool>``, the Copilot CLI
``rawp-<tool>``, fast-agent ``rawp/<tool>`` (its title)."""


def relays_host_call(call: ToolCall) -> bool:
    """Whether ``call`` is the agent's side of a host call: its tool is one of the
    session's ``rawp`` MCP server, whose call the session runtime reports (under the host
    tool's name, with its own gate), so the agent's report of it is not the Master's."""
    raw = call.raw_input
    if isinstance(raw, dict) and raw.get("server") == SERVER_NAME:  # codex-acp's MCP call
        return True
    return any(
        name is not None and _RELAYED_NAME.fullmatch(name) is not None
        for name in (own_tool_name(call), call.title)
    )


def tool_name(call: ToolCall) -> str:
    """The name a tool call is known by: :func:`own_tool_name`, else the ACP ``kind``
    (``execute``, ``edit``, ``read``…), else ``tool``."""
    return own_tool_name(call) or (str(call.kind) if call.kind else "tool")


def waits_for_announcement(init: schema.InitializeResponse) -> bool:
    """Whether the agent's permission requests should wait for its ``tool_call``:
    claude-agent-acp (it advertises ``_meta.claudeCode``) names its tools only in its
    session updates, announces every call as the model streams it whatever a permission's
    answer, and asks from another path of its own, which can overtake the announcement."""
    meta = init.agent_capabilities.field_meta if init.agent_capabilities else None
    return isinstance(meta, dict) and "claudeCode" in meta


def tool_input(call: ToolCall) -> dict[str, Any]:
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
    relayed: bool = False
    """The agent's side of a host call (:func:`relays_host_call`): no frames of its own."""


@dataclass
class Translator:
    """One turn's translation state."""

    turn_id: str
    waits_for_announcement: bool = False
    """See :func:`waits_for_announcement`."""
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

    def announce(self, call: ToolCall) -> list[ClientPayload]:
        """A ``tool.invoke.request`` for a call not announced yet, named by ``call``."""
        if call.tool_call_id in self._tools:
            return []
        name = tool_name(call)
        relayed = relays_host_call(call)
        self._tools[call.tool_call_id] = _Tool(name, relayed=relayed)
        if relayed:
            return []
        return [
            *self._close_block(),
            ToolInvokeRequest(
                invocation_id=call.tool_call_id,
                tool_name=name,
                input=tool_input(call),
                turn_id=self.turn_id,
            ),
        ]

    def permission(self, call: schema.ToolCallUpdate) -> list[ClientPayload] | None:
        """A permission request for ``call``: the frames that announce the call first (none
        when it is announced), or ``None`` when the request is to wait for the agent's own
        announcement (:attr:`waits_for_announcement`, and the request does not name the
        tool itself). Should that never come, :meth:`announce` the call from the request."""
        if (
            self.waits_for_announcement
            and call.tool_call_id not in self._tools
            and own_tool_name(call) is None
        ):
            return None
        return self.announce(call)

    def relayed(self, call: schema.ToolCallUpdate) -> bool:
        """Whether the agent asks about its side of a host call: that call needs no
        answer of the Master's (the runtime asks under the host tool's own gate)."""
        tool = self._tools.get(call.tool_call_id)
        return tool.relayed if tool is not None else relays_host_call(call)

    def question(self, call: schema.ToolCallUpdate, *, timeout_ms: int | None) -> Question:
        """The ``PERMISSION`` question for an announced call, under the name it was
        announced with."""
        return Question.permission(
            self._tools[call.tool_call_id].name,
            tool_input=tool_input(call),
            tool_call_id=call.tool_call_id,
            turn_id=self.turn_id,
            title=call.title,
            timeout_ms=timeout_ms,
        )

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
        if tool.done or tool.relayed:
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
