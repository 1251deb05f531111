"""An adapter for an agent that echoes prompts and asks before it "shouts" one."""

from __future__ import annotations

import anyio

from rawp_adapters import (
    Adapter,
    AdapterSettings,
    CloseResult,
    Question,
    SessionContext,
    Turn,
    TurnResult,
)
from rawp_adapters.frames import Features, TextDelta, TextDone, ToolInvokeRequest, ToolInvokeResult


class EchoSettings(AdapterSettings):
    prefix: str = "echo: "


class EchoAdapter(Adapter[EchoSettings]):
    adapter_type = "echo"
    settings_model = EchoSettings

    def __init__(self, settings: EchoSettings) -> None:
        super().__init__(settings)
        self.ctx: SessionContext | None = None
        self.cancelled = anyio.Event()

    @property
    def features(self) -> Features:
        return Features(
            adapter_type=self.adapter_type, abort=True, tool_events=True, permission_requests=True
        )

    async def start(self, ctx: SessionContext) -> None:
        self.ctx = ctx  # a real adapter starts its agent here

    async def prompt(self, turn: Turn) -> TurnResult:
        assert self.ctx is not None
        self.cancelled = anyio.Event()
        if turn.text.startswith("shout "):
            return await self._shout(turn, turn.text.removeprefix("shout "))
        if turn.text == "wait":  # streams until aborted
            await self.ctx.emit(TextDelta(turn_id=turn.turn_id, index=0, text="waiting"))
            await self.cancelled.wait()
            return TurnResult(stop_reason="cancelled")
        text = self.settings.prefix + turn.text
        await self.ctx.emit(TextDelta(turn_id=turn.turn_id, index=0, text=text))
        await self.ctx.emit(TextDone(turn_id=turn.turn_id, index=0, text=text))
        return TurnResult()

    async def _shout(self, turn: Turn, words: str) -> TurnResult:
        assert self.ctx is not None
        call = ToolInvokeRequest(
            invocation_id="shout-1", tool_name="shout", input={"words": words}, turn_id=turn.turn_id
        )
        await self.ctx.emit(call)
        outcome = await self.ctx.interact(
            Question.permission("shout", tool_input=call.input, tool_call_id="shout-1",
                                turn_id=turn.turn_id)
        )  # fmt: skip
        output = words.upper() if outcome.allowed else f"not allowed ({outcome.reason})"
        await self.ctx.emit(
            ToolInvokeResult(
                invocation_id="shout-1",
                output_type="text",
                output=output,
                is_error=not outcome.allowed,
                turn_id=turn.turn_id,
            )
        )
        return TurnResult()

    async def abort(self, turn: Turn) -> None:
        self.cancelled.set()

    async def close(self) -> CloseResult:
        return CloseResult(exit_code=0)  # a real adapter stops its agent and its tools here
