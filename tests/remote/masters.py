"""Playing the Master against remote sessions with the testing kit's driver."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import cast

import anyio

from rawp_adapters import Session
from rawp_adapters.remote import RemoteSession
from rawp_adapters.testing import Policy, SessionDriver, allow_all

WAIT = 30.0
"""Bound on every wait for a frame."""


@asynccontextmanager
async def driving(
    session: RemoteSession, policy: Policy = allow_all, *, timeout: float = WAIT
) -> AsyncIterator[SessionDriver]:
    """A :class:`SessionDriver` reading ``session`` (a :class:`RemoteSession` has the host
    side of a :class:`Session`: ``control``, ``send``, ``closed``, iteration, ``close``;
    the driver names the local class). On exit the driver stops reading; the session is
    not ended."""
    driver = SessionDriver(cast(Session, session), policy=policy, timeout=timeout)
    async with anyio.create_task_group() as tg:
        tg.start_soon(driver.run)
        try:
            yield driver
        finally:
            tg.cancel_scope.cancel()
