"""The host side of a session: what a Master (or a bridge to one) does with it.

- Reply policies: :class:`Reply`, :data:`Policy`, :func:`allow_all`,
  :func:`deny_all`, :func:`never_answer`.
- :func:`answer_interactions`: read a session's frames and answer its questions by
  a policy; :func:`answer` answers one.
- :func:`serve_stream`: serve a session over any anyio byte stream pair (stdio,
  a TCP socket, …), control lines in and frame lines out.
"""

from rawp_adapters.host._answers import answer, answer_interactions
from rawp_adapters.host._policies import Policy, Reply, allow_all, deny_all, never_answer
from rawp_adapters.host._stream import serve_stream

__all__ = [
    "Policy",
    "Reply",
    "allow_all",
    "answer",
    "answer_interactions",
    "deny_all",
    "never_answer",
    "serve_stream",
]
