"""Sans-IO mapping of the agent's dialogs (``extension_ui_request``) to DPS interactions.

Three sources become ``PERMISSION``: the bundled extension's confirm (title
:data:`PERMISSION_TITLE`, message = JSON details), and omp's built-in approval
(``--approval-mode``: a select titled ``Allow tool: <name>`` with Approve/Deny).
Other confirm/select/input/editor dialogs become CONFIRM/SELECT/INPUT. Whatever the
Master answers, anything but an explicit allow goes back to the agent as a denial.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from rawp_adapter_process._wire import ToolCallInfo, UiRequest
from rawp_adapters import InteractionOutcome
from rawp_adapters.frames import InteractionContext, InteractionType

PERMISSION_TITLE = "rawp.permission"
"""Title of the bundled extension's confirm dialog (see ``extension/permission_gate.ts``)."""

OMP_APPROVAL_PREFIX = "Allow tool: "
_APPROVE, _DENY = "Approve", "Deny"
_SUMMARY_CHARS = 500

AnswerStyle = Literal["confirm", "value", "omp-approval"]
"""How the answer goes back: ``confirmed``, ``value`` (or ``cancelled``), Approve/Deny."""

ClaimTool = Callable[[str], ToolCallInfo | None]


@dataclass(frozen=True, slots=True)
class Dialog:
    """One agent dialog: what to ask the Master, and how to answer the agent."""

    request_id: str
    interaction_type: InteractionType
    style: AnswerStyle
    timeout_ms: int
    title: str | None = None
    message: str | None = None
    options: list[str] | None = None
    context: InteractionContext | None = None

    def response(self, outcome: InteractionOutcome) -> dict[str, Any]:
        """The ``extension_ui_response`` for the Master's decision."""
        allowed = outcome.allowed
        if self.interaction_type == "PERMISSION" and outcome.value is not None:
            # An allow with an edited tool input: the agent cannot take the edit, so deny.
            allowed = False
        answer: dict[str, Any]
        if self.style == "confirm":
            answer = {"confirmed": allowed}
        elif self.style == "omp-approval":
            answer = {"value": _choice(self.options, _APPROVE if allowed else _DENY)}
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
        "omp-approval",
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


def _choice(options: list[str] | None, wanted: str) -> str:
    if not options or wanted in options:
        return wanted
    return options[0] if wanted == _APPROVE else options[-1]
