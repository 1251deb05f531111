"""A host process for the parent-death tests (run as a script, not collected).

Opens a Claude core session and prompts a tool call. With ``permission`` it waits until
the call's permission request is pending (nobody answers); with ``tool`` it allows the
call, a command that runs for minutes. Then it prints ``{"cli_pid": ..., "guard_pid":
...}`` on one line and waits to be killed.
Arguments: SDK adapter settings as JSON, the workspace, the anyio backend, the moment.
"""

from __future__ import annotations

import json
import sys

import anyio
from rawp_adapter_sdk import SdkAdapter
from rawp_adapter_sdk.cores.claude import ClaudeCore

from rawp_adapters.frames import InteractionRequestFrame
from rawp_adapters.testing import allow_all, drive, never_answer

LONG_COMMAND = f'{sys.executable} -c "import time; time.sleep(600)" > slow.txt'


async def main(settings: str, workspace: str, moment: str) -> None:
    adapter = SdkAdapter.from_settings(json.loads(settings))
    core = adapter.core
    assert isinstance(core, ClaudeCore)
    running_tool = moment == "tool"
    policy = allow_all if running_tool else never_answer
    async with drive(adapter, workspace=workspace, policy=policy) as d:
        command = LONG_COMMAND if running_tool else "echo hi > out.txt"
        await d.start_prompt(f"RUN_BASH {command}")
        await d.wait_for(InteractionRequestFrame)
        sys.stdout.write(json.dumps({"cli_pid": core.cli_pid, "guard_pid": core.guard_pid}) + "\n")
        sys.stdout.flush()
        await anyio.sleep_forever()


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[4], backend=sys.argv[3])
