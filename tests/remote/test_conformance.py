"""The conformance kit, every rule, with the sessions on a worker process behind NATS:
the subject opens its sessions with ``RemoteSessions`` instead of ``open_session``."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from rawp_adapters import Adapter, SessionOptions, create_adapter
from rawp_adapters.remote import RemoteSession, RemoteSessions
from rawp_adapters.testing import ConformanceSubject, Prompts
from rawp_adapters.testing.pytest_plugin import ConformanceTests
from tests.remote.cluster import NatsServer, fake_agent, worker_process

AGENT = fake_agent(interaction_timeout_ms=1000)


@pytest.fixture(scope="module")
def remote_prefix(nats: NatsServer) -> Iterator[str]:
    prefix = f"k{uuid.uuid4().hex[:10]}"
    with worker_process(nats.url, prefix, "--max-sessions", "4"):
        yield prefix


@pytest.fixture
def rawp_subject(nats: NatsServer, remote_prefix: str) -> Iterator[ConformanceSubject]:
    opened: list[str] = []

    @asynccontextmanager
    async def open_remote_session(
        adapter: Adapter, *, workspace: Path, options: SessionOptions
    ) -> AsyncIterator[RemoteSession]:
        # The worker builds its own adapter from AGENT; the kit's is left unused.
        async with await RemoteSessions.connect(nats.url, prefix=remote_prefix) as remote:
            session = await remote.open(AGENT, workspace=str(workspace), options=options)
            opened.append(session.session_id)
            yield session

    built: list[Adapter] = []

    def make_adapter() -> Adapter:
        built.append(create_adapter(AGENT))
        return built[-1]

    yield ConformanceSubject(
        make_adapter,
        adapter_type="process",
        prompts=Prompts(answer="Say hello.", tool="TOOL echo hi", busy="HANG"),
        timeout=30,
        open_session=open_remote_session,
    )
    # A rule skipped before any session (a feature not claimed) builds no adapter.
    assert len(opened) == len(built), "each session the kit opened is on the worker"


class TestTheScriptedRpcAgentOnAWorkerOverNats(ConformanceTests):
    pass
