"""``WRITE_PLAN`` for the agents behind the shared chat completions and Anthropic servers:
``responder`` hooks (the keyword rules of those servers are not the ACP tests' to change)
that make the model call the agent's own todo tool with :data:`PLAN_STEPS`, when the
request offers it. The agent then sends a ACP ``plan`` update. codex's ``update_plan`` is
a keyword of ``llm_responses``.
"""

from __future__ import annotations

from typing import Any

from tests.support import llm_anthropic, llm_openai
from tests.support.llm_responses import PLAN_STEPS, WRITE_PLAN

__all__ = ["PLAN_STEPS", "WRITE_PLAN", "anthropic_plan", "openai_plan"]


def _tools(body: Any) -> list[dict[str, Any]]:
    tools = body.get("tools") if isinstance(body, dict) else None
    return [t for t in tools if isinstance(t, dict)] if isinstance(tools, list) else []


def openai_plan(body: dict[str, Any]) -> llm_openai.Reply | None:
    """omp's ``todo`` tool: one phase holding the steps."""
    names = {str((t.get("function") or {}).get("name")) for t in _tools(body)}
    if (
        "todo" not in names
        or llm_openai.trailing_tool_results(body)
        or WRITE_PLAN not in llm_openai.last_user_text(body)
    ):
        return None
    call = llm_openai.ToolCall(
        "todo", {"op": "init", "list": [{"phase": "Fix", "items": list(PLAN_STEPS)}]}
    )
    return llm_openai.Reply(tool_calls=(call,), finish_reason="tool_calls")


def anthropic_plan(body: dict[str, Any]) -> llm_anthropic.Reply | None:
    """Claude Code's ``TodoWrite``, the first step ``in_progress``; where it offers the
    task tools instead (claude-agent-acp 0.101.0: to Haiku 4.5 chosen at start, to its
    default Opus only with ``CLAUDE_CODE_ENABLE_TODO_TOOLS``), one ``TaskCreate`` per step."""
    names = {str(t.get("name")) for t in _tools(body)}
    if (
        not names & {"TodoWrite", "TaskCreate"}
        or llm_anthropic.tool_results(body)
        or WRITE_PLAN not in llm_anthropic.last_user_text(body)
    ):
        return None
    if "TodoWrite" not in names:
        blocks = tuple(
            llm_anthropic.Block(
                kind="tool_use",
                name="TaskCreate",
                input={"subject": step, "description": step, "activeForm": step},
            )
            for step in PLAN_STEPS
        )
        return llm_anthropic.Reply(blocks=blocks, stop_reason="tool_use")
    todos = [
        {"content": step, "activeForm": step, "status": "in_progress" if i == 0 else "pending"}
        for i, step in enumerate(PLAN_STEPS)
    ]
    block = llm_anthropic.Block(kind="tool_use", name="TodoWrite", input={"todos": todos})
    return llm_anthropic.Reply(blocks=(block,), stop_reason="tool_use")
