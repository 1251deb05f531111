"""The host side of a session: what a Master (or a bridge to one) does with it.

- Reply policies: :class:`Reply`, :data:`Policy`, :func:`allow_all`,
  :func:`deny_all`, :func:`never_answer`.
- :func:`answer_interactions`: read a session's frames and answer its questions by
  a policy; :func:`answer` answers one. Both take any :class:`SessionLike` (a local
  session or a remote one).
- Host tools: declare them in :class:`HostTools` (``@tools.tool(...)``; a handler
  gets a :class:`ToolCall`, returns a result or raises :class:`ToolError`), and
  :func:`serve_host` / :class:`Host` publish them on a session and answer its
  ``tool.invoke.request`` frames, together with its questions, in one reading loop.
- :class:`Delegation`: a ready host tool (``Task``) that runs a sub-agent through
  any installed adapter, relays its output with ``metadata.delegation_chain`` and
  forwards its permission requests to the Master's policy as a
  :class:`DelegatedRequest`.
- :func:`serve_stream`: serve a session over any anyio byte stream pair (stdio,
  a TCP socket, …), control lines in and frame lines out.

Each name is imported from its module when first used (``serve --stdio`` needs
only :func:`serve_stream`).
"""

from typing import TYPE_CHECKING

from rawp_adapters._lazy import lazy_exports

if TYPE_CHECKING:
    from rawp_adapters.host._answers import answer, answer_interactions
    from rawp_adapters.host._delegation import Delegation
    from rawp_adapters.host._host import CatalogRefused, DelegatedRequest, Host, serve_host
    from rawp_adapters.host._policies import Policy, Reply, allow_all, deny_all, never_answer
    from rawp_adapters.host._session_like import SessionLike
    from rawp_adapters.host._stream import serve_stream
    from rawp_adapters.host._tools import HostTools, Tool, ToolCall, ToolError, ToolOutput

__all__ = [
    "CatalogRefused",
    "DelegatedRequest",
    "Delegation",
    "Host",
    "HostTools",
    "Policy",
    "Reply",
    "SessionLike",
    "Tool",
    "ToolCall",
    "ToolError",
    "ToolOutput",
    "allow_all",
    "answer",
    "answer_interactions",
    "deny_all",
    "never_answer",
    "serve_host",
    "serve_stream",
]

if not TYPE_CHECKING:  # checkers read the imports above
    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "rawp_adapters.host._answers": ("answer", "answer_interactions"),
            "rawp_adapters.host._delegation": ("Delegation",),
            "rawp_adapters.host._host": (
                "CatalogRefused",
                "DelegatedRequest",
                "Host",
                "serve_host",
            ),
            "rawp_adapters.host._policies": (
                "Policy",
                "Reply",
                "allow_all",
                "deny_all",
                "never_answer",
            ),
            "rawp_adapters.host._session_like": ("SessionLike",),
            "rawp_adapters.host._stream": ("serve_stream",),
            "rawp_adapters.host._tools": (
                "HostTools",
                "Tool",
                "ToolCall",
                "ToolError",
                "ToolOutput",
            ),
        },
    )
