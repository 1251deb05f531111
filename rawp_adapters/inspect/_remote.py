"""A remote session (``rawp_adapters.remote``, over NATS) as the inspector reads it;
imported only when the page attaches to one, as it needs nats-py."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from rawp_adapters.host import SessionLike
from rawp_adapters.remote import RemoteSessions


@asynccontextmanager
async def attached(
    url: str, session_id: str, from_seq: int, prefix: str
) -> AsyncIterator[SessionLike]:
    """The session's frames from after ``from_seq`` (its workers' subject ``prefix``);
    on exit the inspector detaches and the session goes on."""
    async with await RemoteSessions.connect(url, prefix=prefix) as remote:
        yield await remote.attach(session_id, from_seq=from_seq)
