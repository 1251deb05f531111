"""Answering a session's interaction requests with a :data:`Policy`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import suppress

import anyio
from anyio.abc import TaskGroup

from rawp_adapters._errors import SessionClosedError
from rawp_adapters._frames import (
    ClientFrame,
    ControlFrame,
    InteractionRequest,
    InteractionRequestFrame,
    InteractionResolvedFrame,
)
from rawp_adapters.host._policies import Policy
from rawp_adapters.host._session_like import SessionLike

Send = Callable[[ControlFrame], Awaitable[None]]


async def answer(
    session: SessionLike, request: InteractionRequest, policy: Policy, *, send: Send | None = None
) -> bool:
    """Ask ``policy`` about ``request`` and send its reply with ``send`` (default
    ``session.send``). Returns whether a reply was sent: not when the policy returns
    ``None`` or the session has closed meanwhile."""
    reply = policy(request)
    if isinstance(reply, Awaitable):
        reply = await reply
    if reply is None or session.closed:
        return False
    control = session.control
    frame = (
        control.timeout(request.interaction_id)
        if reply.timeout
        else control.respond(request.interaction_id, reply.decision, reply.value)
    )
    with suppress(SessionClosedError):
        await (send or session.send)(frame)
        return True
    return False


async def answer_interactions(
    session: SessionLike,
    policy: Policy,
    *,
    on_frame: Callable[[ClientFrame], object] | None = None,
    send: Send | None = None,
) -> None:
    """Read ``session``'s frames to their end (``session.closed``), answering every
    ``agent.interaction.request`` with :func:`answer`, each in a task of its own so
    a slow policy holds up nothing else.

    ``on_frame`` sees every frame first (to show or record it). A question that is
    resolved otherwise (the adapter's deadline, an abort, the session's end) stops
    being asked: its answer would come too late.
    """
    async with anyio.create_task_group() as tg:
        asking = _Asking(session, policy, send, tg)
        async for frame in session:
            if on_frame is not None:
                on_frame(frame)
            if isinstance(frame, InteractionRequestFrame):
                asking.start(frame.payload)
            elif isinstance(frame, InteractionResolvedFrame):
                asking.stop(frame.payload.interaction_id)
        tg.cancel_scope.cancel()


class _Asking:
    """The questions being asked, by interaction id."""

    def __init__(self, session: SessionLike, policy: Policy, send: Send | None, tg: TaskGroup):
        self._session = session
        self._policy = policy
        self._send = send
        self._tg = tg
        self._scopes: dict[str, anyio.CancelScope] = {}

    def start(self, request: InteractionRequest) -> None:
        scope = self._scopes[request.interaction_id] = anyio.CancelScope()
        self._tg.start_soon(self._ask, scope, request)

    def stop(self, interaction_id: str) -> None:
        scope = self._scopes.pop(interaction_id, None)
        if scope is not None:
            scope.cancel()

    async def _ask(self, scope: anyio.CancelScope, request: InteractionRequest) -> None:
        with scope:
            try:
                await answer(self._session, request, self._policy, send=self._send)
            finally:
                self._scopes.pop(request.interaction_id, None)
