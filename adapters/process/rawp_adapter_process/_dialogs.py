"""Sans-IO mapping of the agent's dialogs (``extension_ui_request``) to DPS interactions.

Three sources become ``PERMISSION``: the bundled extension's confirm (title
:data:`PERMISSION_TITLE`, message = JSON details), and omp's built-in approval
(``--approval-mode``: a select titled ``Allow tool: <name>`` with Approve/Deny).
Other confirm/select/input/editor dialogs become CONFIRM/SELECT/INPUT. Whatever the
Master answers, anything but an explicit allow goes back to the agent as a denial.

Select-style dialogs are answered by :func:`choose_option` alone: a denial never picks
an option that approves, an allow never picks a standing grant ("Always approve"), and
when no option plainly says what the Master decided the dialog is cancelled (every
agent of the family treats a cancelled dialog as a refusal).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, Literal

import msgspec

from rawp_adapter_process._wire import ToolCallInfo, UiRequest
from rawp_adapters import InteractionOutcome, Question
from rawp_adapters.frames import InteractionContext, InteractionType

PERMISSION_TITLE = "rawp.permission"
"""Title of the bundled extension's confirm dialog (see ``extension/permission_gate.ts``)."""

OMP_APPROVAL_PREFIX = "Allow tool: "
_SUMMARY_CHARS = 500

_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
_APPROVING = frozenset(
    {"approve", "allow", "yes", "accept", "ok", "okay", "confirm", "proceed", "run", "grant"}
)
_REFUSING = frozenset(
    {"deny", "reject", "cancel", "block", "refuse", "decline", "disallow", "abort", "stop", "skip"}
)
_NEGATING = frozenset({"no", "not", "don't", "dont", "never", "without"})
_STANDING = frozenset({"always", "never", "session", "remember", "forever", "all", "again"})
"""Words of an option that decides more than this one call (a standing grant or ban)."""

AnswerStyle = Literal["confirm", "value", "choice"]
"""How the answer goes back: ``confirmed``; ``value`` from the Master (or ``cancelled``);
the option :func:`choose_option` picks for the Master's decision (or ``cancelled``)."""

ClaimTool = Callable[[str], ToolCallInfo | None]


# A msgspec Struct, not a dataclass: defined at each ``serve --stdio`` start, ~40x faster.
class Dialog(msgspec.Struct, frozen=True):
    """One agent dialog: what to ask the Master, and how to answer the agent."""

    request_id: str
    interaction_type: InteractionType
    style: AnswerStyle
    timeout_ms: int
    title: str | None = None
    message: str | None = None
    options: list[str] | None = None
    context: InteractionContext | None = None

    def question(self, turn_id: str | None) -> Question:
        """What to ask the Master."""
        return Question(
            self.interaction_type,
            turn_id=turn_id,
            title=self.title,
            message=self.message,
            options=tuple(self.options) if self.options is not None else None,
            context=self.context,
            timeout_ms=self.timeout_ms,
        )

    def response(self, outcome: InteractionOutcome) -> dict[str, Any]:
        """The ``extension_ui_response`` for the Master's decision."""
        allowed = outcome.allowed
        if self.interaction_type == "PERMISSION" and outcome.value is not None:
            # An allow with an edited tool input: the agent cannot take the edit, so deny.
            allowed = False
        answer: dict[str, Any]
        if self.style == "confirm":
            answer = {"confirmed": allowed}
        elif self.style == "choice":
            option = choose_option(self.options, allow=allowed)
            answer = {"cancelled": True} if option is None else {"value": option}
        elif allowed and outcome.value is not None:
            answer = {"value": outcome.value}
        else:
            answer = {"cancelled": True}
        return {"type": "extension_ui_response", "id": self.request_id, **answer}

    def denial(self) -> dict[str, Any]:
        """The answer that refuses, sent without asking (abort, close)."""
        return self.response(InteractionOutcome(decision="deny", reason="aborted"))


def interpret(request: UiRequest, *, timeout_ms: int, claim_tool: ClaimTool) -> Dialog | None:
    """The dialog an ``extension_ui_request`` opens, or ``None`` when it expects no answer
    (notify, setStatus, setWidget, setTitle, set_editor_text, cancel)."""
    if request.timeout is not None and request.timeout > 0:
        timeout_ms = min(timeout_ms, int(request.timeout))
    method = request.method
    if method == "confirm":
        if request.title == PERMISSION_TITLE:
            permission = _extension_permission(request, timeout_ms)
            if permission is not None:
                return permission
        return Dialog(request.id, "CONFIRM", "confirm", timeout_ms, request.title, request.message)
    if method == "select":
        title = request.title or ""
        if title.startswith(OMP_APPROVAL_PREFIX):
            return _omp_approval(request, title, timeout_ms, claim_tool)
        return Dialog(
            request.id, "SELECT", "value", timeout_ms, request.title, options=request.options
        )
    if method == "input":
        return Dialog(request.id, "INPUT", "value", timeout_ms, request.title, request.placeholder)
    if method == "editor":
        return Dialog(request.id, "INPUT", "value", timeout_ms, request.title, request.prefill)
    return None


def _extension_permission(request: UiRequest, timeout_ms: int) -> Dialog | None:
    try:
        details = json.loads(request.message or "")
    except ValueError:
        return None
    if not isinstance(details, dict) or not isinstance(details.get("tool_name"), str):
        return None
    tool_name: str = details["tool_name"]
    tool_input = details.get("tool_input")
    tool_input = tool_input if isinstance(tool_input, dict) else {}
    call_id = details.get("tool_call_id")
    return Dialog(
        request.id,
        "PERMISSION",
        "confirm",
        timeout_ms,
        title=f"Allow {tool_name}?",
        message=summarize_input(tool_input),
        context=InteractionContext(
            tool_name=tool_name,
            tool_input=tool_input,
            tool_call_id=call_id if isinstance(call_id, str) else None,
        ),
    )


def _omp_approval(request: UiRequest, title: str, timeout_ms: int, claim_tool: ClaimTool) -> Dialog:
    first_line, _, rest = title[len(OMP_APPROVAL_PREFIX) :].partition("\n")
    tool_name = first_line.strip() or "unknown"
    call = claim_tool(tool_name)
    return Dialog(
        request.id,
        "PERMISSION",
        "choice",
        timeout_ms,
        title=f"Allow {tool_name}?",
        message=rest or None,
        options=request.options,
        context=InteractionContext(
            tool_name=tool_name,
            tool_input=call.arguments if call is not None else None,
            tool_call_id=call.id if call is not None else None,
        ),
    )


def summarize_input(tool_input: dict[str, Any]) -> str:
    """One readable line or so about what the tool call will do."""
    for key in ("command", "path", "file_path", "url", "pattern"):
        value = tool_input.get(key)
        if isinstance(value, str):
            return value[:_SUMMARY_CHARS]
    return json.dumps(tool_input, ensure_ascii=False)[:_SUMMARY_CHARS]


def choose_option(options: list[str] | None, *, allow: bool) -> str | None:
    """The option of a select-style dialog that says ``allow`` (or refuse) for this one
    call; ``None`` when no option says so plainly: the dialog is then cancelled.

    An option approves when it has an approving word and neither a refusing nor a
    negating one ("Approve", "Yes", "Allow once"); it refuses when it has a refusing or a
    negating word ("Deny", "No", "Don't allow"). Options that also decide later calls
    ("Always approve", "Deny and never ask again") are never picked.
    """
    for option in options or ():
        words = set(_WORD.findall(option.lower().replace("\u2019", "'")))
        if words & _STANDING:
            continue
        refuses = bool(words & (_REFUSING | _NEGATING))
        if refuses != allow and (refuses or words & _APPROVING):
            return option
    return None
