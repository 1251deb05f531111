"""The inspector attached to a session that runs on a remote worker (NATS JetStream):
the same page drives it as a local one."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import anyio

from rawp_adapters import AgentMetadata
from rawp_adapters.remote import RemoteSessions
from tests.inspect.conftest import Frames, Server, fetch, inspector
from tests.remote.cluster import nats_server, worker_process


def open_remote_session(url: str, prefix: str) -> str:
    """A demo-core session queued for the workers; this Master detaches at once."""

    async def main() -> str:
        async with await RemoteSessions.connect(url, prefix=prefix) as remote:
            metadata = AgentMetadata(adapter_type="sdk", settings={"core": "demo"})
            session = await remote.open(metadata)
            return session.session_id

    return anyio.run(main)


def control(server: Server, feed_id: str, **request: object) -> None:
    status, _, answer = fetch(
        server, f"/api/feeds/{feed_id}/control", token=server.token, body=request
    )
    assert status == 200, answer


def test_a_remote_session_is_driven_from_the_inspector_and_shown_from_the_seq_it_is_joined_at(
    tmp_path: Path,
) -> None:
    prefix = f"i{uuid.uuid4().hex[:10]}"
    with (
        nats_server(tmp_path / "nats") as nats,
        worker_process(nats.url, prefix, "--workspace-root", str(tmp_path)),
        inspector(tmp_path) as server,
    ):
        session_id = open_remote_session(nats.url, prefix)
        body = {"nats_url": nats.url, "session_id": session_id, "from_seq": 0, "prefix": prefix}
        status, _, attached = fetch(server, "/api/remote", token=server.token, body=body)
        assert status == 200, attached
        feed_id = json.loads(attached)["feed_id"]
        frames = Frames(server, feed_id)
        assert frames.until("session.capabilities")["session_id"] == session_id
        control(server, feed_id, op="prompt", text="Write a note to notes.txt")
        question = frames.until("agent.interaction.request")
        control(server, feed_id, op="allow", interaction_id=question["payload"]["interaction_id"])
        turn_end = frames.until("session.turn.end")
        assert turn_end["payload"]["stop_reason"] == "end_turn"
        # A second view of the same session, joined after its seq 5: shown, not judged.
        late = {**body, "from_seq": 5}
        status, _, joined = fetch(server, "/api/remote", token=server.token, body=late)
        assert status == 200, joined
        assert json.loads(joined)["checked"] is False
        later = Frames(server, json.loads(joined)["feed_id"])
        assert later.next()["seq"] == 6
        assert later.until("session.turn.end") == turn_end
        control(server, feed_id, op="end")
        frames.until("session.closed")
        later.until("session.closed")
        frames.connection.close()
        later.connection.close()
        status, _, listed = fetch(server, "/api/feeds", token=server.token)
        whole, from_5 = json.loads(listed)
        assert (whole["kind"], whole["checked"], whole["violations"]) == ("remote", True, 0)
        assert (from_5["kind"], from_5["checked"], from_5["violations"]) == ("remote", False, 0)
        assert (tmp_path / session_id / "notes.txt").read_text().startswith("You asked:")
