"""What a Master needs of a session, wherever it runs."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

from rawp_adapters._control import ControlFrames
from rawp_adapters._frames import ClientFrame, ControlFrame


class SessionLike(Protocol):
    """A session as its Master sees it: frames read with ``async for`` (``session.closed``
    last), control frames built with :attr:`control` and sent with :meth:`send`,
    :meth:`close` to end it. A local :class:`rawp_adapters.Session` is one, and so is a
    :class:`rawp_adapters.remote.RemoteSession`."""

    @property
    def session_id(self) -> str: ...

    @property
    def control(self) -> ControlFrames: ...

    @property
    def closed(self) -> bool:
        """Whether ``session.closed`` has been emitted."""
        ...

    def __aiter__(self) -> AsyncIterator[ClientFrame]: ...

    async def send(self, frame: ControlFrame) -> None: ...

    async def close(self) -> None:
        """End the session and return once ``session.closed`` is out."""
        ...
