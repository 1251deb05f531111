"""A small scripted adapter for the core's tests: each prompt runs a script."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import ClassVar

import anyio

from rawp_adapters import Adapter, AdapterSettings, CloseResult, SessionContext, Turn, TurnResult
from rawp_adapters.frames import Features, TextDelta, TextDone

Script = Callable[[Turn, SessionContext], Awaitable[TurnResult]]


async def say_hello(turn: Turn, ctx: SessionContext) -> TurnResult:
    for part in ("Hel", "lo"):
        await ctx.emit(TextDelta(turn_id=turn.turn_id, index=0, text=part))
    await ctx.emit(TextDone(turn_id=turn.turn_id, index=0, text="Hello"))
    return TurnResult()


class ScriptedAdapter(Adapter):
    adapter_type: ClassVar[str] = "scripted"

    def __init__(
        self,
        script: Script = say_hello,
        *,
        features: Features | None = None,
        start_error: Exception | None = None,
    ) -> None:
        super().__init__(AdapterSettings())
        self.script = script
        self._features = features or Features(adapter_type="scripted", abort=True)
        self._start_error = start_error
        self.ctx: SessionContext | None = None
        self.prompts: list[Turn] = []
        self.aborted: list[str] = []
        self.abort_event = anyio.Event()
        self.closed = False
        self.compacted: list[str | None] = []

    @property
    def features(self) -> Features:
        return self._features

    async def start(self, ctx: SessionContext) -> None:
        self.ctx = ctx
        if self._start_error is not None:
            raise self._start_error

    async def prompt(self, turn: Turn) -> TurnResult:
        self.prompts.append(turn)
        assert self.ctx is not None
        return await self.script(turn, self.ctx)

    async def abort(self, turn: Turn) -> None:
        self.aborted.append(turn.turn_id)
        self.abort_event.set()

    async def compact(self, custom_instructions: str | None) -> None:
        self.compacted.append(custom_instructions)

    async def close(self) -> CloseResult:
        self.closed = True
        return CloseResult(exit_code=0)
