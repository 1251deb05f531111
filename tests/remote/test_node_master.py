"""A Master in another language: Node.js with the ``nats`` npm package (installed by
``scripts/install-node-master``), nothing of this project, following specs/remote.md."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import anyio
import pytest

from rawp_adapters.remote import RemoteSessions
from rawp_adapters.testing import check_frames
from tests.remote.cluster import REPO_ROOT, NatsServer, fake_agent, running_worker
from tests.remote.masters import WAIT

pytestmark = pytest.mark.anyio

MASTER = REPO_ROOT / "tests" / "remote" / "node_master" / "master.js"
NODE_MODULES = REPO_ROOT / ".cache" / "node-master" / "node_modules"
FLOOD = 2000
"""Text deltas of the turn, its question among them."""


@pytest.fixture
def node() -> str:
    found = shutil.which("node")
    if found is None or not (NODE_MODULES / "nats").is_dir():
        pytest.skip("needs node and the nats npm package: scripts/install-node-master")
    return found


async def test_a_node_master_streams_a_turn_answers_its_question_and_reattaches_after_its_last_seq(
    nats: NatsServer, prefix: str, tmp_path: Path, node: str
) -> None:
    metadata = fake_agent().model_dump_json()
    argv = [node, str(MASTER), nats.url, prefix, metadata, str(tmp_path), f"FLOOD {FLOOD}"]
    env = {**os.environ, "NODE_PATH": str(NODE_MODULES)}
    async with running_worker(nats.url, prefix):
        with anyio.fail_after(WAIT):
            done = await anyio.run_process(argv, env=env, check=False)
        assert done.returncode == 0, done.stderr.decode()
        seen = [json.loads(line) for line in done.stdout.decode().splitlines()]
        session_id = seen[0]["session_id"]
        async with await RemoteSessions.connect(nats.url, prefix=prefix) as remote:
            replay = await remote.attach(session_id)
            with anyio.fail_after(WAIT):
                everything = [frame async for frame in replay]
    assert [(line["seq"], line["type"]) for line in seen] == [(f.seq, f.type) for f in everything]
    first, second = ([line for line in seen if line["connection"] == n] for n in (1, 2))
    assert first[-1]["type"] == "agent.interaction.request"
    assert second[0]["seq"] == first[-1]["seq"] + 1  # re-attached after its last seq
    assert any(line["type"] == "agent.text.delta" for line in second)  # lost mid-stream
    resolved = next(f for f in everything if f.type == "agent.interaction.resolved")
    assert (resolved.payload.outcome, resolved.payload.decided_by) == ("allowed", "master")
    assert everything[-1].type == "session.closed"
    assert everything[-1].payload.reason == "explicit"
    assert check_frames(everything) == []
