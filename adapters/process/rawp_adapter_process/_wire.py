"""The xcsh RPC wire: typed decoding of the agent's stdout lines, encoding of commands.

Only the fields the adapter uses are declared; msgspec skips everything else without
building it. That matters: every ``message_update`` repeats the whole partial message
twice (~850 bytes around a 10-byte delta), and ``agent_end`` or ``get_state`` carry whole
histories. Every event is a struct tagged by its ``type``, so a batch of lines decodes
in one pass (:func:`decode_batch`); a line on its own is dispatched on its ``type``
prefix, and a type the adapter ignores is then not parsed at all (:func:`decode_line`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, TypeVar, Union, get_args

import msgspec

from rawp_adapters import OversizedLine

T = TypeVar("T", bound=msgspec.Struct)


class WireError(ValueError):
    """A stdout line that is not a JSON object of the shape its type promises."""


# ----------------------------------------------------------------- shared shapes


class ContentBlock(msgspec.Struct):
    type: str = ""
    text: str = ""


class ToolCallInfo(msgspec.Struct):
    id: str
    name: str
    arguments: dict[str, Any] = {}


class AssistantMessageEvent(msgspec.Struct):
    type: str
    contentIndex: int = 0
    delta: str = ""
    content: str | None = None
    toolCall: ToolCallInfo | None = None


class Cost(msgspec.Struct):
    total: float = 0.0


class Usage(msgspec.Struct):
    input: float = 0
    output: float = 0
    cacheRead: float = 0
    cacheWrite: float = 0
    cost: Cost | None = None


class MessageInfo(msgspec.Struct):
    role: str = ""
    stopReason: str | None = None
    errorMessage: str | None = None
    usage: Usage | None = None


class ToolResult(msgspec.Struct):
    content: list[ContentBlock] = []
    details: msgspec.Raw = msgspec.Raw()


class CompactionResult(msgspec.Struct):
    summary: str | None = None
    tokensBefore: float | None = None


class AgentState(msgspec.Struct):
    isStreaming: bool = False


class EditDetails(msgspec.Struct):
    diff: str | None = None


# ----------------------------------------------------------------- stdout messages


class _Event(msgspec.Struct, tag_field="type"):
    """A line of the agent's stdout; its ``type`` is the subclass's tag."""


class Ready(_Event, tag="ready"):
    version: str | None = None


class Response(_Event, tag="response"):
    id: str | None = None
    command: str | None = None
    success: bool = False
    error: str | None = None
    data: msgspec.Raw = msgspec.Raw()


class UiRequest(_Event, tag="extension_ui_request"):
    id: str = ""
    method: str = ""
    title: str | None = None
    message: str | None = None
    options: list[str] | None = None
    placeholder: str | None = None
    prefill: str | None = None
    timeout: float | None = None
    targetId: str | None = None


class SessionHeader(_Event, tag="session"):
    """First line of the one-shot JSON mode: the session the next run can resume."""

    id: str | None = None


class AgentStart(_Event, tag="agent_start"):
    pass


class AgentEnd(_Event, tag="agent_end"):
    isTerminal: bool | None = None
    messages: list[MessageInfo] = []


class MessageUpdate(_Event, tag="message_update"):
    assistantMessageEvent: AssistantMessageEvent


class MessageEnd(_Event, tag="message_end"):
    message: MessageInfo


class ToolExecutionStart(_Event, tag="tool_execution_start"):
    toolCallId: str
    toolName: str
    args: dict[str, Any] = {}


class ToolExecutionUpdate(_Event, tag="tool_execution_update"):
    toolCallId: str
    toolName: str = ""
    partialResult: ToolResult | None = None


class ToolExecutionEnd(_Event, tag="tool_execution_end"):
    toolCallId: str
    toolName: str = ""
    result: ToolResult | None = None
    isError: bool = False


class AutoRetryStart(_Event, tag="auto_retry_start"):
    attempt: int = 0
    maxAttempts: int = 0
    delayMs: float = 0.0
    errorMessage: str = ""


class AutoRetryEnd(_Event, tag="auto_retry_end"):
    success: bool = False
    attempt: int = 0
    finalError: str | None = None


class AutoCompactionEnd(_Event, tag="auto_compaction_end"):
    """xcsh and omp: the end of an automatic compaction."""

    result: CompactionResult | None = None
    aborted: bool = False
    errorMessage: str | None = None


class CompactionEnd(_Event, tag="compaction_end"):
    """pi: the end of any compaction; ``reason`` is ``manual`` for the ``compact`` command."""

    reason: str | None = None
    result: CompactionResult | None = None
    aborted: bool = False
    errorMessage: str | None = None


class ExtensionError(_Event, tag="extension_error"):
    extensionPath: str = ""
    event: str = ""
    error: str = ""


class HostToolCallRequest(_Event, tag="host_tool_call"):
    """omp: the agent calls a tool the host published with ``set_host_tools``."""

    id: str
    toolCallId: str
    toolName: str
    arguments: dict[str, Any] = {}


class HostToolCancel(_Event, tag="host_tool_cancel"):
    """omp: the agent stopped waiting for host tool call ``targetId`` (an abort)."""

    targetId: str = ""


WireMessage = (
    Ready
    | Response
    | UiRequest
    | SessionHeader
    | AgentStart
    | AgentEnd
    | MessageUpdate
    | MessageEnd
    | ToolExecutionStart
    | ToolExecutionUpdate
    | ToolExecutionEnd
    | AutoRetryStart
    | AutoRetryEnd
    | AutoCompactionEnd
    | CompactionEnd
    | ExtensionError
    | HostToolCallRequest
    | HostToolCancel
)

_TYPES: dict[bytes, type[Any]] = {
    kind.__struct_config__.tag.encode(): kind for kind in get_args(WireMessage)
}
_DECODERS: dict[bytes, msgspec.json.Decoder[Any]] = {
    name: msgspec.json.Decoder(kind) for name, kind in _TYPES.items()
}
IGNORED_EVENTS: Final = (
    "message_start",
    "turn_start",
    "turn_end",
    "auto_compaction_start",
    "compaction_start",
    "available_commands_update",
    "advisor_cost_changed",
    "queue_update",
    "notice",
    "session_info_changed",
    "todo_reminder",
    "todo_auto_clear",
    "ttsr_triggered",
    "retry_fallback_applied",
    "retry_fallback_succeeded",
)
"""Events the agents write that the adapter does not read (others are skipped as
well, only more slowly: see :func:`decode_batch`)."""
_IGNORED: Final = frozenset(
    msgspec.defstruct(f"Ignored_{name}", [], bases=(_Event,), tag=name) for name in IGNORED_EVENTS
)
_decode_event = msgspec.json.Decoder(Union[(*get_args(WireMessage), *_IGNORED)]).decode
_TYPE_PREFIX = b'{"type":"'
_TYPE_START = len(_TYPE_PREFIX)


class _Head(msgspec.Struct):
    type: str | None = None


_head = msgspec.json.Decoder(_Head)
_encode = msgspec.json.Encoder().encode


def decode_batch(lines: Sequence[bytes | OversizedLine]) -> list[WireMessage] | None:
    """The messages of ``lines``, in one pass, when every line is an event of a type
    listed here (read or ignored) that decodes; ``None`` otherwise, and the caller goes
    line by line with :func:`decode_line`, which says what is wrong with a line."""
    try:
        events = list(map(_decode_event, lines))  # type: ignore[arg-type]
    except (msgspec.DecodeError, UnicodeDecodeError, TypeError):
        return None  # TypeError: an OversizedLine
    ignored = _IGNORED
    return [event for event in events if type(event) not in ignored]


def decode_line(line: bytes) -> WireMessage | None:
    """The typed message of one stdout line; ``None`` for a type the adapter ignores.

    Raises :class:`WireError` when the line is not a JSON object of its type's shape.
    Invalid UTF-8 is replaced (U+FFFD) rather than losing the line.
    """
    try:
        return _decode(line)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        # msgspec before 0.23 raises UnicodeDecodeError for invalid UTF-8 inside a
        # string, later versions a DecodeError: either way, a line that is not UTF-8 is
        # read again with the bad bytes replaced.
        repaired = line.decode("utf-8", "replace").encode()
        if repaired == line:
            raise WireError(str(exc)) from exc
        try:
            return _decode(repaired)
        except msgspec.DecodeError as again:
            raise WireError(str(again)) from again


def _decode(line: bytes) -> WireMessage | None:
    if line.startswith(_TYPE_PREFIX):
        kind = line[_TYPE_START : line.find(b'"', _TYPE_START)]
    else:
        head = _head.decode(line).type
        if head is None:
            raise WireError("a JSON object without a string `type`")
        kind = head.encode()
    decoder = _DECODERS.get(kind)
    if decoder is None:
        return None
    message: WireMessage = decoder.decode(line)
    return message


def decode_state(data: msgspec.Raw) -> AgentState:
    """The idle flag of a ``get_state`` answer."""
    return _decode_raw(data, AgentState)


def decode_compaction(data: msgspec.Raw) -> CompactionResult:
    """The ``data`` of a ``compact`` answer."""
    return _decode_raw(data, CompactionResult)


_NOTHING_TO_COMPACT = ("Nothing to compact", "Already compacted")
"""How omp and pi refuse a ``compact`` that has nothing to do (their ``error`` text)."""


def nothing_to_compact(error: str | None) -> bool:
    """A failed ``compact`` answer that says there was nothing to do, not a failure."""
    return error is not None and error.startswith(_NOTHING_TO_COMPACT)


def decode_edit_details(data: msgspec.Raw) -> EditDetails:
    return _decode_raw(data, EditDetails)


def _decode_raw(data: msgspec.Raw, kind: type[T]) -> T:
    if not data:
        return kind()
    try:
        return msgspec.json.decode(data, type=kind)
    except (msgspec.DecodeError, UnicodeDecodeError):
        return kind()


def encode_command(command: dict[str, Any]) -> bytes:
    """One command line for the agent's stdin."""
    return _encode(command) + b"\n"
