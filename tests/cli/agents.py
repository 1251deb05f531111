"""Scripted agents for the CLI tests: run in-process through FunctionAdapter, or in a
``rawp-adapters`` subprocess through :class:`PluginAdapter`, which a test registers
for that subprocess only (see ``conftest.plugin_env``)."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from rawp_adapters import AdapterSettings, AgentFailure, SessionContext, Turn, TurnResult
from rawp_adapters.frames import (
    Features,
    TextDelta,
    TextDone,
    ThinkingDelta,
    ThinkingDone,
    ToolInvokeRequest,
    ToolInvokeResult,
)
from rawp_adapters.testing import FunctionAdapter, TurnFunction, ask_permission, say, stall

NOTES = "notes.txt"
PERMISSION_TIMEOUT_MS = 30_000
"""Long on purpose: a test that sees ``timeout`` sooner proves the CLI sent it."""


async def write_notes(tool_input: Mapping[str, Any], ctx: SessionContext) -> str:
    (ctx.workspace / NOTES).write_text("hi")
    return f"wrote {NOTES}"


ask_to_write = ask_permission(
    "write_file",
    {"path": NOTES, "content": "hi"},
    timeout_ms=PERMISSION_TIMEOUT_MS,
    run=write_notes,
)
"""Asks PERMISSION for write_file; writes notes.txt only when allowed and reports the
outcome's reason in the tool result."""


async def think_then_answer(turn: Turn, ctx: SessionContext) -> TurnResult:
    tid = turn.turn_id
    await ctx.emit(ThinkingDelta(turn_id=tid, index=0, text="Let me\nthink"))
    await ctx.emit(ThinkingDone(turn_id=tid, index=0, text="Let me\nthink"))
    await ctx.emit(
        ToolInvokeRequest(
            invocation_id="c1", tool_name="bash", input={"command": "ls"}, turn_id=tid
        )
    )
    await ctx.emit(
        ToolInvokeResult(invocation_id="c1", output_type="text", output="a\nb\nc", turn_id=tid)
    )
    await ctx.emit(TextDelta(turn_id=tid, index=1, text="Three "))
    await ctx.emit(TextDelta(turn_id=tid, index=1, text="files."))
    await ctx.emit(TextDone(turn_id=tid, index=1, text="Three files."))
    return TurnResult()


async def fail(turn: Turn, ctx: SessionContext) -> TurnResult:
    await ctx.emit(TextDelta(turn_id=turn.turn_id, index=0, text="Trying"))
    raise AgentFailure.of("the model is overloaded")


async def print_to_stdout(turn: Turn, ctx: SessionContext) -> TurnResult:
    print("stray output that is not a frame")
    sys.stdout.flush()
    return await say("Hel", "lo")(turn, ctx)


async def say_a_lone_surrogate(turn: Turn, ctx: SessionContext) -> TurnResult:
    """Text no UTF-8 writer can carry as it is, as a buggy agent may produce."""
    await ctx.emit(TextDelta(turn_id=turn.turn_id, index=0, text="bad \udc00 text"))
    await ctx.emit(TextDone(turn_id=turn.turn_id, index=0, text="bad \udc00 text"))
    return TurnResult()


FLOOD = 3000


async def flood(turn: Turn, ctx: SessionContext) -> TurnResult:
    """Many frames as fast as the session takes them."""
    for n in range(FLOOD):
        await ctx.emit(TextDelta(turn_id=turn.turn_id, index=0, text=f"{n} "))
    return TurnResult()


SCRIPTS: dict[str, TurnFunction] = {
    "hello": say("Hel", "lo"),
    "ask": ask_to_write,
    "think": think_then_answer,
    "fail": fail,
    "print": print_to_stdout,
    "flood": flood,
    "surrogate": say_a_lone_surrogate,
    "wait_for_abort": stall("Working"),
}


class PluginSettings(AdapterSettings):
    script: Literal[
        "hello", "ask", "think", "fail", "print", "flood", "surrogate", "wait_for_abort"
    ] = "hello"


class PluginAdapter(FunctionAdapter):
    """A FunctionAdapter built from settings, as an installed adapter is; an abort
    cancels the running script."""

    adapter_type: ClassVar[str] = "scripted-cli"
    settings_model: ClassVar[type[AdapterSettings]] = PluginSettings

    def __init__(self, settings: AdapterSettings) -> None:
        assert isinstance(settings, PluginSettings)
        super().__init__(
            SCRIPTS[settings.script],
            features=Features(adapter_type="scripted-cli", abort=True, permission_requests=True),
            abort="cancel",
        )
