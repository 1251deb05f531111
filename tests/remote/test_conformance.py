"""The conformance kit, every rule, with the sessions on a worker process behind NATS:
the kit plays the Master through ``RemoteSessions`` instead of ``open_session``.

The kit opens its sessions with ``rawp_adapters.testing._probe.drive``; these tests put a
remote ``drive`` in its place (a seam the kit has no public hook for yet).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import cast

import anyio
import pytest
from rawp_adapter_process import ProcessAdapter

from rawp_adapters import Adapter, Session, SessionOptions, create_adapter
from rawp_adapters.remote import RemoteSessions
from rawp_adapters.testing import ConformanceSubject, Policy, Prompts, SessionDriver, allow_all
from rawp_adapters.testing.pytest_plugin import ConformanceTests
from tests.remote.cluster import NatsServer, fake_agent, worker_process

AGENT = fake_agent(interaction_timeout_ms=1000)


@pytest.fixture(scope="module")
def remote_prefix(nats: NatsServer) -> Iterator[str]:
    prefix = f"k{uuid.uuid4().hex[:10]}"
    with worker_process(nats.url, prefix, "--max-sessions", "4"):
        yield prefix


@pytest.fixture
def rawp_subject(
    nats: NatsServer, remote_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[ConformanceSubject]:
    opened: list[str] = []

    @asynccontextmanager
    async def remote_drive(
        adapter: Adapter,
        *,
        workspace: str | Path,
        policy: Policy = allow_all,
        timeout: float = 30.0,
        options: SessionOptions | None = None,
        check: bool = True,
    ) -> AsyncIterator[SessionDriver]:
        async with await RemoteSessions.connect(nats.url, prefix=remote_prefix) as remote:
            session = await remote.open(AGENT, workspace=str(workspace), options=options)
            opened.append(session.session_id)
            driver = SessionDriver(cast(Session, session), policy=policy, timeout=timeout)
            async with anyio.create_task_group() as tg:
                tg.start_soon(driver.run)
                try:
                    yield driver
                finally:
                    with (
                        anyio.CancelScope(shield=True),
                        contextlib.suppress(TimeoutError),
                    ):
                        await driver.end(timeout=timeout)
                    tg.cancel_scope.cancel()
        if check:
            driver.assert_valid()

    monkeypatch.setattr("rawp_adapters.testing._probe.drive", remote_drive)

    def make_adapter() -> ProcessAdapter:
        adapter = create_adapter(AGENT)
        assert isinstance(adapter, ProcessAdapter)
        return adapter

    yield ConformanceSubject(
        make_adapter,
        adapter_type="process",
        prompts=Prompts(answer="Say hello.", tool="TOOL echo hi", busy="HANG"),
        timeout=30,
    )
    assert opened, "the kit opened no remote session"


class TestTheScriptedRpcAgentOnAWorkerOverNats(ConformanceTests):
    pass
