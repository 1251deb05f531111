"""A scripted agent that asks one question per turn and says how it was decided."""

from __future__ import annotations

from rawp_adapters import Question, SessionContext, Turn, TurnResult
from rawp_adapters.frames import TextDelta, TextDone
from rawp_adapters.testing import TurnFunction


def asking(kind: str = "PERMISSION", *, timeout_ms: int = 30_000) -> TurnFunction:
    """Asks one ``kind`` question (SELECT offers small and large), then says
    ``decision:reason:value``."""

    async def script(turn: Turn, ctx: SessionContext) -> TurnResult:
        if kind == "PERMISSION":
            question = Question.permission("write", turn_id=turn.turn_id, timeout_ms=timeout_ms)
        else:
            question = Question(
                "SELECT", turn_id=turn.turn_id, options=("small", "large"), timeout_ms=timeout_ms
            )
        outcome = await ctx.interact(question)
        said = f"{outcome.decision}:{outcome.reason}:{outcome.value}"
        await ctx.emit(TextDelta(turn_id=turn.turn_id, index=0, text=said))
        await ctx.emit(TextDone(turn_id=turn.turn_id, index=0, text=said))
        return TurnResult()

    return script
