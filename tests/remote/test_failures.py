"""What fails: a Master killed mid-stream, a worker killed mid-turn or stopped, the
server restarted; and several Masters on one session."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from rawp_adapters.frames import (
    AgentErrorFrame,
    InteractionRequestFrame,
    InteractionResolvedFrame,
    SessionCapabilitiesFrame,
    SessionClosedFrame,
    TextDeltaFrame,
    TurnEndFrame,
)
from rawp_adapters.remote import WORKER_LOST, RemoteSessions
from rawp_adapters.testing import check_frames, never_answer
from tests.remote.cluster import (
    NatsServer,
    fake_agent,
    lease_expired,
    nats_server,
    running_worker,
)
from tests.remote.masters import WAIT, driving
from tests.support.processes import wait_gone

pytestmark = pytest.mark.anyio

REPO_ROOT = Path(__file__).resolve().parents[2]
LEASE = 2.0
"""The lease time of these tests' buckets, in seconds."""


async def test_a_master_killed_mid_stream_reattaches_from_its_last_seq_and_answers_the_question(
    nats: NatsServer, prefix: str, tmp_path: Path, anyio_backend: str
) -> None:
    async with running_worker(nats.url, prefix):
        argv = [sys.executable, "-m", "tests.remote.master_script", nats.url, prefix]
        argv += [str(tmp_path), "FLOOD 400", anyio_backend]
        master = await anyio.open_process(
            argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=REPO_ROOT
        )
        assert master.stdout is not None
        lines = BufferedByteReceiveStream(master.stdout)
        seen: list[dict[str, Any]] = []
        with anyio.fail_after(WAIT):
            while not any("interaction_id" in line for line in seen):
                seen.append(json.loads(await lines.receive_until(b"\n", 1 << 20)))
        master.kill()  # mid-stream: the flood goes on past the question
        await master.wait()
        await master.aclose()
        session_id = seen[0]["session_id"]
        question = next(line["interaction_id"] for line in seen if "interaction_id" in line)
        last = seen[-1]["seq"]
        async with await RemoteSessions.connect(nats.url, prefix=prefix) as remote:
            session = await remote.attach(session_id, from_seq=last)
            async with driving(session, never_answer) as d:
                await session.send(session.control.allow(question))
                resolved = await d.wait_for(InteractionResolvedFrame)
                await d.wait_for(TurnEndFrame)
                await d.end()
            replay = await remote.attach(session_id)
            with anyio.fail_after(WAIT):
                everything = [frame async for frame in replay]
    assert (resolved.payload.outcome, resolved.payload.decided_by) == ("allowed", "master")
    text = "".join(f.payload.text for f in d.of_type(TextDeltaFrame))
    assert text.endswith("allowed=True")
    received = [line["seq"] for line in seen] + [frame.seq for frame in d.frames]
    assert received == list(range(1, len(everything) + 1))  # nothing lost, nothing twice
    assert [line["type"] for line in seen] + [f.type for f in d.frames] == [
        f.type for f in everything
    ]
    assert check_frames(everything) == []


async def test_a_worker_killed_mid_turn_has_its_session_closed_within_the_lease_time(
    nats: NatsServer, prefix: str, tmp_path: Path
) -> None:
    async with await RemoteSessions.connect(nats.url, prefix=prefix, lease_ttl=LEASE) as remote:
        async with running_worker(nats.url, prefix) as doomed:
            session = await remote.open(fake_agent(), workspace=str(tmp_path))
            async with driving(session, never_answer) as d:
                await d.wait_for(SessionCapabilitiesFrame)
                async with running_worker(nats.url, prefix):  # a survivor, idle
                    await d.start_prompt("TOOL echo hi")
                    await d.wait_for(InteractionRequestFrame)
                    on_host = [p.pid for p in psutil.Process(doomed.pid).children(recursive=True)]
                    killed_at = time.monotonic()
                    doomed.process.send_signal(signal.SIGKILL)
                    closed = await d.wait_for(SessionClosedFrame, timeout=LEASE * 5)
                    took = time.monotonic() - killed_at
        await wait_gone(on_host, timeout=10)
    print(f"\nclosing frames {took:.2f} s after SIGKILL (lease {LEASE:g} s)")
    tail = d.frames[-4:]  # the question came before its tool started
    assert [f.type for f in tail] == [
        "agent.error",
        "agent.interaction.resolved",
        "session.turn.end",
        "session.closed",
    ]
    error, resolved, end = d.of_type(AgentErrorFrame)[-1], tail[1], tail[2]
    assert (error.payload.severity, error.payload.error_code) == ("fatal", WORKER_LOST)
    assert isinstance(resolved, InteractionResolvedFrame)
    assert resolved.payload.outcome == "cancelled"
    assert isinstance(end, TurnEndFrame)
    assert end.payload.stop_reason == "error"
    assert closed.payload.reason == "error"
    assert took < LEASE * 2.5
    assert check_frames(d.frames) == []


async def test_a_master_attaching_after_a_worker_died_unwatched_gets_the_closing_frames(
    nats: NatsServer, prefix: str, tmp_path: Path
) -> None:
    async with (
        await RemoteSessions.connect(nats.url, prefix=prefix, lease_ttl=LEASE) as remote,
        running_worker(nats.url, prefix),  # SIGKILLed on exit
    ):
        session = await remote.open(fake_agent(), workspace=str(tmp_path))
        async with driving(session) as d:
            await d.prompt("Say hello.")
        await session.detach()  # no Master watches it, and no other worker runs
    await lease_expired(nats.url, prefix, session.session_id)
    async with await RemoteSessions.connect(nats.url, prefix=prefix) as later:
        again = await later.attach(session.session_id)
        with anyio.fail_after(WAIT):
            frames = [frame async for frame in again]
    assert [f.type for f in frames[-2:]] == ["agent.error", "session.closed"]
    assert frames[-2].seq > d.frames[-1].seq
    assert check_frames(frames) == []


async def test_a_worker_drains_on_sigterm_and_every_session_gets_its_closing_frames(
    nats: NatsServer, prefix: str, tmp_path: Path
) -> None:
    async with (
        await RemoteSessions.connect(nats.url, prefix=prefix) as remote,
        running_worker(nats.url, prefix) as worker,
    ):
        busy = await remote.open(fake_agent(), workspace=str(tmp_path))
        idle = await remote.open(fake_agent(), workspace=str(tmp_path))
        async with driving(busy) as b, driving(idle) as i:
            await i.wait_for(SessionCapabilitiesFrame)
            await b.start_prompt("HANG")
            signalled_at = time.monotonic()
            worker.process.send_signal(signal.SIGTERM)
            busy_closed = await b.closed()
            idle_closed = await i.closed()
            with anyio.fail_after(WAIT):
                code = await worker.process.wait()
            took = time.monotonic() - signalled_at
    print(f"\ndrained 2 sessions and exited {took:.2f} s after SIGTERM")
    assert code == 0
    assert b.of_type("session.turn.end")[0].payload.stop_reason == "cancelled"
    assert (busy_closed.payload.reason, idle_closed.payload.reason) == ("explicit", "explicit")
    assert check_frames(b.frames) == []
    assert check_frames(i.frames) == []
    assert worker.logged("event='drained'")


async def test_a_draining_worker_lets_a_running_turn_end_within_its_grace(
    nats: NatsServer, prefix: str, tmp_path: Path
) -> None:
    async with (
        await RemoteSessions.connect(nats.url, prefix=prefix) as remote,
        running_worker(nats.url, prefix, "--drain-grace", "30") as worker,
    ):
        session = await remote.open(fake_agent(), workspace=str(tmp_path))
        async with driving(session, never_answer) as d:
            await d.start_prompt("TOOL echo hi")
            question = await d.wait_for(InteractionRequestFrame)
            worker.process.send_signal(signal.SIGTERM)
            await worker.wait_logged("event='draining'")
            await session.send(session.control.allow(question.payload.interaction_id))
            end = await d.wait_for(TurnEndFrame)
            closed = await d.closed()
            with anyio.fail_after(WAIT):
                code = await worker.process.wait()
    assert code == 0
    assert end.payload.stop_reason == "end_turn"
    assert closed.payload.reason == "explicit"
    assert check_frames(d.frames) == []


async def test_streams_survive_a_nats_server_restart_and_the_session_goes_on(
    prefix: str, tmp_path: Path
) -> None:
    with nats_server(tmp_path / "store") as server:
        async with (
            running_worker(server.url, prefix) as worker,
            await RemoteSessions.connect(server.url, prefix=prefix) as remote,
        ):
            session = await remote.open(fake_agent(), workspace=str(tmp_path))
            async with driving(session) as d:
                first = await d.prompt("Say hello.")
                await anyio.to_thread.run_sync(server.restart)
                restarted_at = time.monotonic()
                second = await d.prompt("TOOL echo hi")
                took = time.monotonic() - restarted_at
                # the session's control consumer keeps its state in the server's
                # memory: the restarted server had forgotten it, the worker made it again
                await worker.wait_logged("control consumer made again")
                await d.end()
            replay = await remote.attach(session.session_id)
            with anyio.fail_after(WAIT):
                everything = [frame async for frame in replay]
    print(f"\na turn sent right after the server restarted ended {took:.2f} s later")
    assert (first.text, second.text) == ("echo: Say hello.", "allowed=True")
    assert [f.seq for f in d.frames] == list(range(1, len(d.frames) + 1))
    assert [f.seq for f in everything] == [f.seq for f in d.frames]
    assert check_frames(d.transcript) == []


async def test_two_masters_on_one_session_see_the_same_frames_with_the_same_seq(
    nats: NatsServer, prefix: str, tmp_path: Path
) -> None:
    async with (
        running_worker(nats.url, prefix),
        await RemoteSessions.connect(nats.url, prefix=prefix) as first,
        await RemoteSessions.connect(nats.url, prefix=prefix) as second,
    ):
        session = await first.open(fake_agent(), workspace=str(tmp_path))
        watching = await second.attach(session.session_id)
        async with driving(session) as a, driving(watching, never_answer) as b:
            await a.prompt("TOOL echo hi")
            await b.prompt("Say hello.")  # either Master may drive it
            await a.end()
            await b.closed()
    assert [(f.seq, f.type) for f in a.frames] == [(f.seq, f.type) for f in b.frames]
    assert check_frames(a.frames) == []
