"""What a conformance rule works with: fresh, checked sessions of the subject."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio

from rawp_adapters._frames import Features, SessionCapabilitiesFrame
from rawp_adapters._session import SessionOptions
from rawp_adapters.host import Policy, SessionLike, allow_all
from rawp_adapters.testing._driver import SessionDriver, drive_session
from rawp_adapters.testing._outcomes import RuleSkipped
from rawp_adapters.testing._session_checks import (
    check_capabilities,
    check_features,
    check_processes,
    check_runtime_owned,
    check_stream,
    claimed_features,
    descendants,
)
from rawp_adapters.testing._subject import ConformanceSubject


@dataclass(slots=True)
class KnownClaims:
    """The features a session of the subject claimed earlier in this run, if one has: a
    rule for a feature it did not claim is then skipped without starting the agent."""

    features: Features | None = None


class Probe:
    """What a rule works with: fresh checked sessions of the subject."""

    def __init__(
        self, subject: ConformanceSubject, workspace: Path, known: KnownClaims | None = None
    ) -> None:
        self.subject = subject
        self.prompts = subject.prompts
        self.workspace = workspace
        self.known = KnownClaims() if known is None else known
        self.driver: SessionDriver[SessionLike] | None = None
        """The session open now (its frames are shown when the rule fails)."""
        self._ended: list[tuple[SessionDriver[SessionLike], set[int], float]] = []

    @asynccontextmanager
    async def session(
        self, policy: Policy = allow_all, *, claiming: str | None = None
    ) -> AsyncIterator[SessionDriver[SessionLike]]:
        """A session of a new adapter, opened by the subject's ``open_session`` and
        ended on exit. Its capabilities are checked at once; its stream (invariants,
        claimed features) and the processes it left are checked by :meth:`verify` once
        the rule's own checks have passed. With ``claiming``, the rule is skipped unless
        the session claims that feature (before any session, when an earlier one did
        not)."""
        if claiming is not None and self.known.features is not None:
            _claims(self.known.features, claiming)
        adapter = self.subject.make_adapter()
        options = SessionOptions(
            interaction_timeout_ms=self.subject.permission_timeout_ms,
            start_timeout=self.subject.timeout,
        )
        before = await anyio.to_thread.run_sync(descendants)
        started = time.time()
        open_session = self.subject.open_session
        async with (
            open_session(adapter, workspace=self.workspace, options=options) as session,
            drive_session(session, policy=policy, timeout=self.subject.timeout) as d,
        ):
            self.driver = d
            caps = await d.wait_for(SessionCapabilitiesFrame)
            check_capabilities(d, caps, self.subject.adapter_type or type(adapter).adapter_type)
            self._ended.append((d, before, started))
            self.known.features = caps.payload.features
            if claiming is not None:
                _claims(caps.payload.features, claiming)
            yield d
            await d.end()

    async def verify(self) -> None:
        """Check every session's stream, claimed features and leftover processes."""
        for d, before, started in self._ended:
            self.driver = d
            check_stream(d)
            check_runtime_owned(d)
            check_features(d, claimed_features(d))
            await check_processes(d, before, started)


def _claims(features: Features, feature: str) -> None:
    """The rule is skipped unless ``features`` claims ``feature``."""
    if not getattr(features, feature):
        raise RuleSkipped(f"the adapter does not claim {feature}")
