"""A session on a worker is part of the Master's trace: the Master's context goes with
its start request and its control frames (W3C headers on the NATS messages), the
worker, exporting with ``--otel``, puts the session's spans under it, and the messages
of frames it publishes carry that trace back."""

from __future__ import annotations

import asyncio
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path

import anyio
import nats as nats_py
import pytest
from nats.js.errors import NotFoundError
from opentelemetry import trace

from rawp_adapters.remote import Names, RemoteSessions
from tests.remote.cluster import NatsServer, fake_agent, nats_server, running_worker
from tests.remote.masters import WAIT, driving
from tests.telemetry.collector import Collector
from tests.telemetry.recorded import Recorded

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def nats(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServer]:
    with nats_server(tmp_path_factory.mktemp("nats")) as server:
        yield server


async def test_a_remote_sessions_turn_is_a_child_of_the_masters_span_in_one_trace(
    nats: NatsServer, tmp_path: Path, recorded: Recorded
) -> None:
    prefix = f"t{uuid.uuid4().hex[:10]}"
    with Collector().running() as collector:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": collector.url, "OTEL_METRICS_EXPORTER": "none"}
        async with (
            running_worker(nats.url, prefix, "--otel", env=env) as worker,
            await RemoteSessions.connect(nats.url, prefix=prefix) as remote,
        ):
            tracer = trace.get_tracer("tests")
            with tracer.start_as_current_span("master"):
                with tracer.start_as_current_span("open"):
                    session = await remote.open(fake_agent(), workspace=str(tmp_path))
                async with driving(session) as driver:
                    with tracer.start_as_current_span("prompt"):
                        turn = await driver.prompt("Say hello.")
                    await driver.end()
            worker.process.send_signal(signal.SIGTERM)  # drains: its spans are sent
            with anyio.fail_after(WAIT):
                assert await worker.process.wait() == 0, "".join(worker.log)
    assert turn.text == "echo: Say hello."
    (trace_id, opened), (_, prompted) = recorded.ids("open"), recorded.ids("prompt")
    spans = collector.span_names()
    assert spans["create_agent fake"] == (trace_id, opened)
    assert spans["invoke_agent fake"] == (trace_id, prompted)
    for traceparent in await anyio.to_thread.run_sync(
        asyncio.run, frames_traceparents(nats.url, Names(prefix), session.session_id)
    ):
        assert traceparent.split("-")[1] == trace_id


async def frames_traceparents(url: str, names: Names, session_id: str) -> list[str]:
    """The ``traceparent`` header of every message of the session's frames."""
    client = await nats_py.connect(url)
    try:
        js, found, seq = client.jetstream(), list[str](), 1
        while True:
            try:
                message = await js.get_msg(
                    names.frames_stream,
                    seq=seq,
                    subject=names.frames_subject(session_id),
                    next=True,
                )
            except NotFoundError:
                assert found, "no message of frames"
                return found
            found.append((message.headers or {}).get("traceparent", "none"))
            assert message.seq is not None
            seq = message.seq + 1
    finally:
        await client.close()
