"""Every name a Master, a worker and the server agree on: subjects, streams, the lease
bucket, consumers and headers (``specs/remote.md`` is the same list for other languages).

All of them derive from one prefix (``rawp`` by default; a tenant's, e.g. ``acme.rawp``),
so a server's permissions can give each tenant its own names and nothing else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

DEFAULT_PREFIX: Final = "rawp"
MSG_ID: Final = "Nats-Msg-Id"
"""JetStream's de-duplication header: ``<session_id>:<first>-<last>`` on a message of
frames (the ``seq`` range it carries)."""
FIRST_SEQ: Final = "Rawp-First-Seq"
"""The ``seq`` of the first frame in a message of frames."""
LAST_SEQ: Final = "Rawp-Last-Seq"
"""The ``seq`` of the last frame in a message of frames."""
EXPECTED_LAST: Final = "Nats-Expected-Last-Subject-Sequence"
"""JetStream's condition on a publish: the stream sequence of the subject's last message
(``0``: none). Every message of frames names the one before it, so a writer that lost
the session (another party wrote there) is refused by the server."""
WORKER_LOST: Final = "WORKER_LOST"
"""``agent.error`` code of the closing frames written for a session whose worker died."""
START_REFUSED: Final = "START_REFUSED"
"""``agent.error`` code when a worker could not start a session (unknown adapter, bad
settings or workspace)."""

_PREFIX: Final = re.compile(r"[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*")
_SESSION_ID: Final = re.compile(r"[A-Za-z0-9_-]{1,128}")


def check_session_id(session_id: str) -> str:
    """A session id that is one subject token and a valid KV key and consumer name."""
    if not _SESSION_ID.fullmatch(session_id):
        raise ValueError(f"a remote session id is letters, digits, - and _: {session_id!r}")
    return session_id


@dataclass(frozen=True, slots=True)
class Names:
    """The names under one prefix."""

    prefix: str = DEFAULT_PREFIX

    def __post_init__(self) -> None:
        if not _PREFIX.fullmatch(self.prefix):
            raise ValueError(f"a prefix is dot-separated tokens of [A-Za-z0-9_-]: {self.prefix!r}")

    @property
    def _upper(self) -> str:
        return self.prefix.replace(".", "_").upper()

    @property
    def start_stream(self) -> str:
        """Work queue of session-start requests."""
        return f"{self._upper}_START"

    @property
    def start_subject(self) -> str:
        return f"{self.prefix}.start"

    @property
    def start_consumer(self) -> str:
        """The durable pull consumer every worker takes requests from."""
        return "workers"

    @property
    def frames_stream(self) -> str:
        return f"{self._upper}_FRAMES"

    def frames_subject(self, session_id: str) -> str:
        return f"{self.prefix}.frames.{session_id}"

    @property
    def control_stream(self) -> str:
        return f"{self._upper}_CONTROL"

    def control_subject(self, session_id: str) -> str:
        return f"{self.prefix}.control.{session_id}"

    def control_consumer(self, session_id: str) -> str:
        """The durable consumer of one session's control frames (its worker's)."""
        return f"control-{session_id}"

    @property
    def lease_bucket(self) -> str:
        return f"{self._upper}_LEASES"
