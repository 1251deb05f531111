"""The adapter under test, as the conformance kit sees it: how to build it and which
prompts make its agent do what the rules need."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol

from rawp_adapters._adapter import Adapter
from rawp_adapters._session import SessionOptions, open_session
from rawp_adapters.host import SessionLike

PERMISSION_TIMEOUT_MS = 1000
"""The sessions' default permission deadline unless the subject names another."""

KIT_HOST_TOOL: Final[dict[str, Any]] = {
    "name": "kit_echo",
    "description": "Echo a message back (published by the conformance kit).",
    "input_schema": {
        "type": "object",
        "properties": {"message": {"type": "string"}},
        "required": ["message"],
    },
}
"""The host tool the kit publishes for ``Prompts.host_tool``."""


class SessionOpener(Protocol):
    """Opens a session on ``adapter`` in ``workspace`` for as long as the context lasts
    (the kit ends the session before it leaves), as :func:`rawp_adapters.open_session`
    does in this process. One that serves the session elsewhere (another process, a
    worker behind NATS) yields a :class:`SessionLike` for it, and may start the agent
    its own way, leaving ``adapter`` unused."""

    def __call__(
        self, adapter: Adapter, *, workspace: Path, options: SessionOptions
    ) -> AbstractAsyncContextManager[SessionLike]: ...


@dataclass(frozen=True, slots=True)
class Prompts:
    """Prompts that make the subject's agent do what the rules need.

    ``answer``: a short turn that ends by itself. ``tool``: a turn that calls one
    permission-gated tool (the permission rules are skipped without it). ``busy``: a
    turn that streams for long enough to be aborted (several seconds; the abort and
    one-prompt rules are skipped without it). ``host_tool``: a turn that calls the
    Master's tool :data:`KIT_HOST_TOOL` with ``{"message": <any text>}`` (the host tool
    call rule is skipped without it).
    """

    answer: str = "Say hello."
    tool: str | None = None
    busy: str | None = None
    host_tool: str | None = None


@dataclass(frozen=True, slots=True)
class ConformanceSubject:
    """An adapter under test. ``make_adapter`` builds a fresh adapter for each session.

    - ``workspace``: the directory sessions run in; ``None`` gives each rule a fresh
      temporary directory.
    - ``adapter_type``: the type a Master asks for to reach it (``rawp-adapters check``
      sets it); its capabilities must state it. ``None``: the class's own.
    - ``permission_timeout_ms``: the session's interaction deadline, which every
      built-in adapter takes unless configured with one of its own (then configure
      that short in ``make_adapter``).
    - ``timeout``: bound on every wait for the agent, its start included, in seconds.
    - ``open_session``: how each session is opened on the adapter ``make_adapter``
      built (a :class:`SessionOpener`); by default in this process, with
      :func:`rawp_adapters.open_session`.
    """

    make_adapter: Callable[[], Adapter]
    workspace: str | Path | None = None
    prompts: Prompts = field(default_factory=Prompts)
    adapter_type: str | None = None
    permission_timeout_ms: int = PERMISSION_TIMEOUT_MS
    timeout: float = 60.0
    open_session: SessionOpener = open_session
