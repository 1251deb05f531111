"""``OVERTAKE_BASH <command>`` for claude-agent-acp behind the shared Anthropic server (a
``responder`` hook, like ``tests.acp.plans``): a long text, then a ``Bash`` call.

claude-agent-acp sends a call's ``tool_call`` from the loop that relays the model's stream,
one awaited update at a time, and its ``session/request_permission`` from the CLI's
permission callback, which does not wait for that loop: behind :data:`OVERTAKE_DELTAS`
text deltas the permission request arrived first in every run tried (behind 2,000, in
two of three; behind a short text, never).
"""

from __future__ import annotations

import re
from typing import Any

from tests.acp.plans import anthropic_plan
from tests.support import llm_anthropic

OVERTAKE_BASH = "OVERTAKE_BASH"
OVERTAKE_DELTAS = 8000
_OVERTAKE_RE = re.compile(re.escape(OVERTAKE_BASH) + r"[ \t]+([^\n]+)")


def overtaking_bash(body: dict[str, Any]) -> llm_anthropic.Reply | None:
    match = _OVERTAKE_RE.search(llm_anthropic.last_user_text(body))
    if match is None or llm_anthropic.tool_results(body):
        return None
    text = llm_anthropic.Block(kind="text", chunks=("x",) * OVERTAKE_DELTAS)
    call = llm_anthropic.Block(
        kind="tool_use",
        name="Bash",
        input={"command": match.group(1).strip(), "description": llm_anthropic.BASH_DESCRIPTION},
    )
    return llm_anthropic.Reply(blocks=(text, call), stop_reason="tool_use")


def anthropic_replies(body: dict[str, Any]) -> llm_anthropic.Reply | None:
    """The ACP tests' ``responder`` of the Anthropic server."""
    return anthropic_plan(body) or overtaking_bash(body)
