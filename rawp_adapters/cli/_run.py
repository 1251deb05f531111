"""``rawp-adapters run``: one prompt, one session, driven from the terminal."""

from __future__ import annotations

import signal
from collections.abc import Callable
from contextlib import ExitStack, suppress
from pathlib import Path
from typing import Final

import anyio
from anyio.abc import TaskGroup

from rawp_adapters._adapter import Adapter
from rawp_adapters._errors import SessionClosedError
from rawp_adapters._frames import ClientFrame, ControlFrame, StopReason, TurnEndFrame
from rawp_adapters._session import Session, open_session
from rawp_adapters.host import Policy, answer_interactions

EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
EXIT_CANCELLED: Final = 130


def exit_code(stop_reason: StopReason | None) -> int:
    """0 for ``end_turn``, 130 for ``cancelled``, 1 otherwise (or when no turn ended)."""
    if stop_reason == "end_turn":
        return EXIT_OK
    if stop_reason == "cancelled":
        return EXIT_CANCELLED
    return EXIT_FAILED


async def run_prompt(
    adapter: Adapter,
    prompt: str,
    *,
    workspace: Path,
    show: Callable[[ClientFrame], None],
    policy: Policy,
    notify: Callable[[str], None],
    handle_interrupts: bool = True,
) -> int:
    """Open a session, send ``prompt``, show every frame, answer the agent's questions
    by ``policy``, end the session once the turn is over. Returns the exit code.

    With ``handle_interrupts``, the first SIGINT aborts the turn and the second ends
    the session.
    """
    stop_reason: StopReason | None = None
    async with (
        open_session(adapter, workspace=workspace) as session,
        anyio.create_task_group() as tg,
    ):

        def on_frame(frame: ClientFrame) -> None:
            nonlocal stop_reason
            show(frame)
            if isinstance(frame, TurnEndFrame) and stop_reason is None:
                stop_reason = frame.payload.stop_reason
                tg.start_soon(session.close)

        if handle_interrupts:
            tg.start_soon(_abort_on_interrupt, session, tg, notify)
        await _send(session, session.control.prompt(prompt))
        await answer_interactions(session, policy, on_frame=on_frame)
        tg.cancel_scope.cancel()
    return exit_code(stop_reason)


async def _send(session: Session, frame: ControlFrame) -> None:
    """Send unless the session has already closed (then its frames tell why)."""
    with suppress(SessionClosedError):
        await session.send(frame)


async def _abort_on_interrupt(
    session: Session, tg: TaskGroup, notify: Callable[[str], None]
) -> None:
    with ExitStack() as stack:
        try:
            signals = stack.enter_context(anyio.open_signal_receiver(signal.SIGINT))
        except NotImplementedError:  # asyncio on Windows: Ctrl-C stays KeyboardInterrupt
            return
        aborted = False
        async for _ in signals:
            turn_id = session.turn_id
            if turn_id is not None and not aborted:
                aborted = True
                notify("interrupted: aborting the turn (Ctrl-C again ends the session)")
                await _send(session, session.control.abort(turn_id))
            else:
                notify("interrupted: ending the session")
                tg.start_soon(session.close)
