"""A host process for the host-death tests (run as a script, not collected).

Opens a process-adapter session, runs one prompt to its end (every tool allowed), then
prints ``{"children": [...], "supervisor": pid, "text": ..., "tool_outputs": [...]}`` on
one line (its children are the agent and the supervisor that guards it) and waits to be
killed.
Arguments: process adapter settings as JSON, the workspace, the prompt, the anyio backend.
"""

from __future__ import annotations

import json
import sys

import anyio
import psutil
from rawp_adapter_process import ProcessAdapter

from rawp_adapters.frames import ToolInvokeResultFrame
from rawp_adapters.processes import host_supervisor
from rawp_adapters.testing import allow_all, drive


async def main(settings: str, workspace: str, prompt: str) -> None:
    adapter = ProcessAdapter.from_settings(json.loads(settings))
    async with drive(adapter, workspace=workspace, policy=allow_all, timeout=60) as d:
        turn = await d.prompt(prompt)
        report = {
            "children": [child.pid for child in psutil.Process().children()],
            "supervisor": host_supervisor().pid,
            "text": turn.text,
            "tool_outputs": [f.payload.output for f in turn.of_type(ToolInvokeResultFrame)],
        }
        sys.stdout.write(json.dumps(report) + "\n")
        sys.stdout.flush()
        await anyio.sleep_forever()


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3], backend=sys.argv[4])
