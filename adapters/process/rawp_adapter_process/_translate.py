"""Sans-IO translation of xcsh-family RPC events into DPS payloads.

No I/O and no clock: an event goes in, payloads (and :class:`RunEnded` signals) come
out. The translator knows which DPS turn is running; stream events outside a turn are
dropped (the session would drop them anyway).

Text and thinking blocks are numbered per DPS turn (one prompt can span several
assistant messages, each with its own ``contentIndex`` from 0). Tool output deltas are
computed from the agent's cumulative partial results. Usage is summed over the turn's
assistant messages; the stop reason is the last assistant message's.

The agents retry a failed model call by themselves. pi ends the failed run
(``agent_end``), announces the retry (``auto_retry_start``) and reports itself idle
while it waits; :attr:`Translator.retry_pending` says that a run is still to come, so
the turn stays open until the retry runs or the retries end (:class:`RetriesEnded`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import msgspec

from rawp_adapter_process._plans import TODO_TOOL, changed_plan
from rawp_adapter_process._wire import (
    AgentEnd,
    AgentStart,
    AutoCompactionEnd,
    AutoRetryEnd,
    AutoRetryStart,
    CompactionEnd,
    CompactionResult,
    ContentBlock,
    ExtensionError,
    MessageEnd,
    MessageInfo,
    MessageUpdate,
    ToolCallInfo,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
    ToolResult,
    WireMessage,
    decode_edit_details,
)
from rawp_adapters.frames import (
    AgentError,
    ClientPayload,
    OutputType,
    PlanUpdated,
    SessionCompacted,
    SessionUsage,
    StopReason,
    TextDelta,
    TextDone,
    ThinkingDelta,
    ThinkingDone,
    ToolInvokeRequest,
    ToolInvokeResult,
    ToolInvokeStream,
    construct_unchecked,
)


# msgspec Structs, not dataclasses: defined at each ``serve --stdio`` start, ~40x faster.
class RunStarted(msgspec.Struct, frozen=True):
    """``agent_start``: a run of the agent loop began (its own, or a prompt's)."""


class RunEnded(msgspec.Struct, frozen=True):
    """``agent_end``: one run of the agent loop is over.

    ``terminal`` is the agent's own word on whether it is now idle (omp's
    ``isTerminal``); ``None`` when it does not say (pi, xcsh: ask ``get_state``).
    """

    terminal: bool | None


class RetriesEnded(msgspec.Struct, frozen=True):
    """``auto_retry_end``: the agent's retries of a failed model call are over (they
    succeeded, gave up or were cancelled)."""


class TurnOutcome(msgspec.Struct, frozen=True):
    """How the turn ended, from the last assistant message and the retries."""

    stop_reason: StopReason
    usage: SessionUsage | None
    error: str | None
    """The agent's error message when ``stop_reason`` is ``error``."""


Signal = RunStarted | RunEnded | RetriesEnded
SIGNALS = (RunStarted, RunEnded, RetriesEnded)
"""What :meth:`Translator.feed` returns besides payloads, for ``isinstance``."""
Output = ClientPayload | Signal
_RUN_STARTED = RunStarted()
_RETRIES_ENDED = RetriesEnded()

_RUN_EVENTS = (MessageUpdate, MessageEnd, ToolExecutionStart, ToolExecutionUpdate, ToolExecutionEnd)
"""Events that belong to the run they happen in."""

_STOP_REASONS: dict[str, StopReason] = {
    "stop": "end_turn",
    "toolUse": "end_turn",
    "length": "max_tokens",
    "error": "error",
    "aborted": "cancelled",
}

_OUTPUT_TYPES: dict[str, OutputType] = {
    "bash": "text",
    "eval": "text",
    "python": "text",
    "grep": "text",
    "read": "file_content",
    "edit": "diff",
    "write": "empty",
    "ls": "file_list",
    "find": "file_list",
    "glob": "file_list",
    "fetch": "web_content",
    "web_fetch": "web_content",
    "web_search": "web_content",
    "browser": "web_content",
    "task": "agent_result",
}

DEVICE_PREFIX: Final = "xd://"
"""omp runs any of its tools when the model writes the JSON arguments to
``xd://<tool>`` with its ``write`` tool (its "tool devices")."""
DEVICE_WRITER: Final = "write"
INTENT_FIELD: Final = "i"
"""omp has the model say its intent in this field of every tool call."""

_PROBE_CHARS, _PROBE_TRIES = 64, 16
"""How a rewritten tool output is matched against what was already sent."""


def output_type_for(tool_name: str) -> OutputType:
    """How to render the result of ``tool_name`` (``text`` for tools not listed)."""
    return _OUTPUT_TYPES.get(tool_name, "text")


def new_output(sent: str, current: str) -> str:
    """The part of a cumulative tool output ``current`` not yet in ``sent``.

    Agents may rewrite their partial output to keep only a tail window; then
    ``current`` starts with a tail of ``sent``, found by its first line, and only what
    follows that tail is new. Anything else counts as new output in full.
    """
    if current.startswith(sent):
        return current[len(sent) :]
    head = current[:_PROBE_CHARS]
    newline = head.find("\n")
    probe = head[: newline + 1] if newline >= 0 else head
    end = len(sent)
    for _ in range(_PROBE_TRIES):
        at = sent.rfind(probe, 0, end)
        if at < 0:
            break
        if current.startswith(sent[at:]):
            return current[len(sent) - at :]
        end = at + len(probe) - 1
    return current


def device_of(tool_name: str, tool_input: Mapping[str, Any] | None) -> str | None:
    """The tool a call of ``tool_name`` runs as a device (``write`` to ``xd://<tool>``,
    read as omp reads the path), or None."""
    if tool_name != DEVICE_WRITER or tool_input is None:
        return None
    path = tool_input.get("path")
    if not isinstance(path, str):
        return None
    path = path.strip()
    if path[: len(DEVICE_PREFIX)].lower() != DEVICE_PREFIX:
        return None
    name = path[len(DEVICE_PREFIX) :]
    if not name or any(c in name for c in "/?#"):
        return None
    return name


def _text_of(content: list[ContentBlock]) -> str:
    if len(content) == 1:
        return content[0].text
    return "\n".join(block.text for block in content if block.type == "text")


class _Block:
    __slots__ = ("index", "parts", "thinking")

    def __init__(self, index: int, thinking: bool) -> None:
        self.index = index
        self.thinking = thinking
        self.parts: list[str] = []


class _ToolRun:
    __slots__ = ("name", "sent")

    def __init__(self, name: str) -> None:
        self.name = name
        self.sent = ""


class _UsageSum:
    __slots__ = ("cache_read", "cache_write", "cost", "input", "output", "seen")

    def __init__(self) -> None:
        self.seen = False
        self.input = self.output = self.cache_read = self.cache_write = 0
        self.cost = 0.0

    def add(self, message: MessageInfo) -> None:
        usage = message.usage
        if usage is None:
            return
        self.seen = True
        self.input += int(usage.input)
        self.output += int(usage.output)
        self.cache_read += int(usage.cacheRead)
        self.cache_write += int(usage.cacheWrite)
        if usage.cost is not None:
            self.cost += usage.cost.total

    def payload(self, turn_id: str) -> SessionUsage | None:
        if not self.seen:
            return None
        return SessionUsage(
            turn_id=turn_id,
            input_tokens=self.input,
            output_tokens=self.output,
            cache_read_tokens=self.cache_read,
            cache_write_tokens=self.cache_write,
            cost_usd=self.cost,
        )


class Translator:
    """xcsh/omp/pi RPC events of one session in, DPS payloads out."""

    def __init__(self) -> None:
        self._turn_id: str | None = None
        self.run_active = False
        """Between ``agent_start`` and ``agent_end``."""
        self.retry_pending = False
        """Between ``auto_retry_start`` and the retry's ``agent_start`` (or the end of the
        retries): the agent is waiting to run again, whatever it says about being idle."""
        self.retry_delay = 0.0
        """Seconds the agent said it waits before the pending retry."""
        self._foreign_run = False
        """The active run began before this turn (an aborted turn's run ending late): its
        events and its end are not this turn's."""
        self.host_tools: frozenset[str] = frozenset()
        """Names of the tools the Master published: their calls are the runtime's to
        report (see :meth:`claim_host_call`)."""
        self._reset_turn()

    def _reset_turn(self) -> None:
        self._blocks: dict[int, _Block] = {}
        self._next_index = 0
        self._tools: dict[str, _ToolRun] = {}
        self._announced: dict[str, ToolCallInfo] = {}
        self._usage = _UsageSum()
        self._stop: str | None = None
        self._error: str | None = None
        self._final_error: str | None = None
        self._assistant_ends_in_run = 0
        self._aborted = False
        self._host_claimed: set[str] = set()
        self._host_held: dict[str, ToolExecutionStart] = {}

    @property
    def turn_id(self) -> str | None:
        return self._turn_id

    def begin_turn(self, turn_id: str) -> None:
        self._reset_turn()
        self._turn_id = turn_id
        self._foreign_run = self.run_active

    def note_abort(self) -> None:
        """The turn was asked to stop: a failed end is then the abort, not a failure (the
        session runtime reports a plain end after an abort as cancelled itself)."""
        self._aborted = True

    def finish_turn(self) -> TurnOutcome:
        """End the running turn and say how it ended."""
        turn_id = self._turn_id
        assert turn_id is not None, "finish_turn() without a turn"
        stop = _STOP_REASONS.get(self._stop or "stop", "end_turn")
        if self._aborted and stop == "error":
            stop = "cancelled"
        error = None
        if stop == "error":
            error = self._final_error or self._error or "the agent reported an error"
        outcome = TurnOutcome(stop, self._usage.payload(turn_id), error)
        self._turn_id = None
        self._reset_turn()
        return outcome

    def claim_announced_tool(self, tool_name: str) -> ToolCallInfo | None:
        """The oldest tool call the model made that has not started yet (omp asks for
        approval before ``tool_execution_start``, naming only the tool), with the
        arguments the tool runs with: omp takes out the model's intent (``i``) first."""
        for call_id, call in self._announced.items():
            if call.name == tool_name:
                del self._announced[call_id]
                arguments = {k: v for k, v in call.arguments.items() if k != INTENT_FIELD}
                return ToolCallInfo(call.id, call.name, arguments)
        return None

    def host_tool_of(self, tool_name: str, tool_input: Mapping[str, Any] | None) -> str | None:
        """The published host tool a call of ``tool_name`` runs: that tool itself, or the
        one a ``write`` to ``xd://<name>`` runs. Such a write is the host call (omp gives
        it the write's id): the session runtime reports it, not as a ``write``."""
        if tool_name in self.host_tools:
            return tool_name
        device = device_of(tool_name, tool_input)
        return device if device in self.host_tools else None

    def claim_host_call(self, tool_call_id: str) -> None:
        """The agent asked the Master to run call ``tool_call_id``: the session runtime
        reports it, so the agent's own events of that call are dropped."""
        self._host_claimed.add(tool_call_id)
        self._host_held.pop(tool_call_id, None)

    def feed(self, event: WireMessage) -> list[Output]:
        if type(event) is MessageUpdate:  # most events by far; isinstance is slower
            output = self.update(event)
            return [] if output is None else [output]
        if self._foreign_run and isinstance(event, _RUN_EVENTS):
            return []
        match event:
            case ToolExecutionUpdate():
                return self._on_tool_update(event)
            case MessageEnd():
                return self._on_message_end(event.message)
            case ToolExecutionStart():
                return self._on_tool_start(event)
            case ToolExecutionEnd():
                return self._on_tool_end(event)
            case AgentStart():
                self._assistant_ends_in_run = 0
                self.run_active = True
                self.retry_pending = False
                self._foreign_run = False
                return [_RUN_STARTED]
            case AgentEnd():
                return self._on_agent_end(event)
            case AutoRetryStart():
                self.retry_pending = True
                self.retry_delay = max(event.delayMs, 0.0) / 1000
                return [
                    AgentError(
                        severity="warning",
                        error_code="AGENT_ERROR",
                        message=f"the model call failed ({event.errorMessage}); the agent "
                        f"retries it in {self.retry_delay:g} s (attempt "
                        f"{event.attempt}/{event.maxAttempts})",
                    )
                ]
            case AutoRetryEnd():
                self.retry_pending = False
                if not event.success:
                    self._final_error = event.finalError or "the retries failed"
                return [_RETRIES_ENDED]
            case AutoCompactionEnd():
                return _compacted(event.result, event.aborted, event.errorMessage)
            case CompactionEnd():
                if event.reason == "manual":
                    return []  # reported from the `compact` answer
                return _compacted(event.result, event.aborted, event.errorMessage)
            case ExtensionError():
                return [
                    AgentError(
                        severity="warning",
                        error_code="AGENT_ERROR",
                        message=f"extension {event.extensionPath} failed in "
                        f"{event.event}: {event.error}",
                    )
                ]
            case _:
                return []

    # ------------------------------------------------------------ assistant text

    def update(self, message: MessageUpdate) -> ClientPayload | None:
        """:meth:`feed` for the most common message, with at most one payload (and never
        a signal) to show for it."""
        turn_id = self._turn_id
        if turn_id is None or self._foreign_run:
            return None
        event = message.assistantMessageEvent
        kind = event.type
        if kind == "text_delta" or kind == "thinking_delta":
            if not event.delta:
                return None
            thinking = kind == "thinking_delta"
            block = self._blocks.get(event.contentIndex) or self._block(
                event.contentIndex, thinking
            )
            block.parts.append(event.delta)
            return _delta(thinking, turn_id, block.index, event.delta)
        if kind == "text_start" or kind == "thinking_start":
            self._block(event.contentIndex, kind == "thinking_start")
            return None
        if kind == "text_end" or kind == "thinking_end":
            ended = self._blocks.pop(event.contentIndex, None)
            if ended is None:
                ended = _Block(self._take_index(), kind == "thinking_end")
            text = event.content if event.content is not None else "".join(ended.parts)
            return _done(turn_id, ended, text)
        if kind == "toolcall_end" and event.toolCall is not None:
            self._announced[event.toolCall.id] = event.toolCall
        return None

    def _block(self, content_index: int, thinking: bool) -> _Block:
        block = self._blocks.get(content_index)
        if block is None:
            block = self._blocks[content_index] = _Block(self._take_index(), thinking)
        return block

    def _take_index(self) -> int:
        index = self._next_index
        self._next_index += 1
        return index

    def _on_message_end(self, message: MessageInfo) -> list[Output]:
        if message.role != "assistant":
            return []
        self._assistant_ends_in_run += 1
        self._note_assistant(message)
        # A block cut short (an abort) is closed by the session runtime at turn end.
        self._blocks = {}
        if self._turn_id is not None:
            self._usage.add(message)
        return []

    def _note_assistant(self, message: MessageInfo) -> None:
        self._stop = message.stopReason
        self._error = message.errorMessage if message.stopReason == "error" else None

    def _on_agent_end(self, event: AgentEnd) -> list[Output]:
        self.run_active = False
        if self._foreign_run:
            self._foreign_run = False
            return []
        if self._assistant_ends_in_run == 0:
            # The agent failed before streaming: the run's only trace is in agent_end.
            for message in reversed(event.messages):
                if message.role == "assistant":
                    self._note_assistant(message)
                    if self._turn_id is not None:
                        self._usage.add(message)
                    break
        self._assistant_ends_in_run = 0
        return [RunEnded(event.isTerminal)]

    # ------------------------------------------------------------ tools

    def _on_tool_start(self, event: ToolExecutionStart) -> list[Output]:
        self._announced.pop(event.toolCallId, None)
        if self._turn_id is None:
            return []
        if self.host_tool_of(event.toolName, event.args) is not None:
            # Held until it is known whether the Master is asked (the agent's
            # host_tool_call, before or after this) or the agent refused the call itself.
            if event.toolCallId not in self._host_claimed:
                self._host_held[event.toolCallId] = event
            return []
        return self._begin_tool(event)

    def _begin_tool(self, event: ToolExecutionStart) -> list[Output]:
        # A write to a device reports what the device's tool gives (an MCP tool's text).
        self._tools[event.toolCallId] = _ToolRun(
            device_of(event.toolName, event.args) or event.toolName
        )
        return [
            ToolInvokeRequest(
                invocation_id=event.toolCallId,
                tool_name=event.toolName,
                input=event.args,
                turn_id=self._turn_id,
            )
        ]

    def _on_tool_update(self, event: ToolExecutionUpdate) -> list[Output]:
        turn_id = self._turn_id
        run = self._tools.get(event.toolCallId)
        if turn_id is None or run is None or event.partialResult is None:
            return []
        current = _text_of(event.partialResult.content)
        fresh = new_output(run.sent, current)
        run.sent = current
        if not fresh:
            return []
        return [ToolInvokeStream(invocation_id=event.toolCallId, output=fresh, turn_id=turn_id)]

    def _on_tool_end(self, event: ToolExecutionEnd) -> list[Output]:
        self._host_claimed.discard(event.toolCallId)
        held = self._host_held.pop(event.toolCallId, None)
        if held is not None:
            # A host tool call the agent refused itself (its own input check): the
            # Master was never asked, so it is reported like any tool of the agent.
            return [*self._begin_tool(held), *self._on_tool_end(event)]
        run = self._tools.pop(event.toolCallId, None)
        if self._turn_id is None or run is None:
            return []
        name = run.name or event.toolName
        result = event.result or ToolResult()
        output_type = "text" if event.isError else output_type_for(name)
        outputs: list[Output] = [
            ToolInvokeResult(
                invocation_id=event.toolCallId,
                output_type=output_type,
                output=_result_output(output_type, result),
                is_error=event.isError,
                turn_id=self._turn_id,
            )
        ]
        if name == TODO_TOOL and not event.isError:
            entries = changed_plan(result.details)
            if entries is not None:
                outputs.append(PlanUpdated(entries=entries, turn_id=self._turn_id))
        return outputs


def _done(turn_id: str, block: _Block, text: str) -> TextDone | ThinkingDone:
    """``TextDone`` (or ``ThinkingDone``) built as :func:`_delta` builds a delta: the
    text is the agent's (a ``str`` msgspec decoded) or the deltas' joined."""
    fields = {"turn_id": turn_id, "index": block.index, "text": text}
    if block.thinking:
        fields["redacted"] = False
        return construct_unchecked(ThinkingDone, fields, _DELTA_FIELDS)
    return construct_unchecked(TextDone, fields, _DELTA_FIELDS)


def _result_output(output_type: OutputType, result: ToolResult) -> str | None:
    if output_type == "empty":
        return None
    if output_type == "diff":
        diff = decode_edit_details(result.details).diff
        if diff:
            return diff
    return _text_of(result.content)


def _compacted(result: CompactionResult | None, aborted: bool, error: str | None) -> list[Output]:
    if error:
        return [
            AgentError(
                severity="warning",
                error_code="AGENT_ERROR",
                message=f"automatic compaction failed: {error}",
            )
        ]
    if aborted or result is None:
        return []
    tokens = int(result.tokensBefore) if result.tokensBefore is not None else None
    return [SessionCompacted(trigger="auto", tokens_before=tokens, summary=result.summary)]


_DELTA_FIELDS: Final = {"turn_id", "index", "text"}


def _delta(thinking: bool, turn_id: str, index: int, text: str) -> TextDelta | ThinkingDelta:
    """``TextDelta(turn_id=, index=, text=)`` (or ``ThinkingDelta``) as pydantic builds
    it, without validating again what is typed already: the turn id and index are the
    translator's own, the text a ``str`` msgspec decoded. The hot path of every agent."""
    if thinking:
        fields = {"turn_id": turn_id, "index": index, "text": text, "redacted": False}
        return construct_unchecked(ThinkingDelta, fields, _DELTA_FIELDS)
    return construct_unchecked(
        TextDelta, {"turn_id": turn_id, "index": index, "text": text}, _DELTA_FIELDS
    )
