"""A Master as a process of its own, to be killed mid-stream:

    python -m tests.remote.master_script URL PREFIX WORKSPACE PROMPT BACKEND

Opens a session with the scripted RPC agent, sends PROMPT, and prints one JSON line per
frame as it arrives (``{"session_id", "seq", "type"}``, and ``interaction_id`` for a
question); it answers nothing.
"""

from __future__ import annotations

import json
import sys

import anyio

from rawp_adapters.remote import RemoteSessions
from tests.remote.cluster import fake_agent


async def main(url: str, prefix: str, workspace: str, prompt: str) -> None:
    async with await RemoteSessions.connect(url, prefix=prefix) as remote:
        session = await remote.open(fake_agent(interaction_timeout_ms=60_000), workspace=workspace)
        await session.send(session.control.prompt(prompt))
        async for frame in session:
            line = {"session_id": frame.session_id, "seq": frame.seq, "type": frame.type}
            if frame.type == "agent.interaction.request":
                line["interaction_id"] = frame.payload.interaction_id
            sys.stdout.write(json.dumps(line) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    url, prefix, workspace, prompt, backend = sys.argv[1:]
    anyio.run(main, url, prefix, workspace, prompt, backend=backend)
