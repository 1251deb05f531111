"""Benchmarks of the GitHub Copilot SDK core (printed, never asserted).

    .venv/bin/python benchmarks/bench_copilot.py [--backend asyncio|trio|both] [--quick]

Needs the Copilot CLI of ``scripts/install-copilot`` (``.cache/copilot``); without it the
benchmark says so and exits 0. Everything runs against the scripted OpenAI-compatible
server on 127.0.0.1 (``tests/support/llm_openai.py``), which the CLI reaches over HTTP
like a real provider.

- frames/s of one streamed answer (``SLOW_STREAM <n> 0``: n text deltas, no delay):
  the core through a session of the ``sdk`` adapter, against the Copilot SDK alone on the
  same stream (a ``CopilotClient`` session with the same options, its own
  ``assistant.message_delta`` events, no adapter): the ratio is what the adapter costs.
  The demo core (``delay_ms=0``) in the same run, for reference: it streams from memory,
  not through a CLI from a server, so it is no baseline of the same stream.
- permission round trip of a gated ``write``: from the Master's allow to the write's
  ``tool.invoke.result`` (allow → the bridge → the answer to the CLI's permission
  request → the CLI runs the tool → its ``tool.execution_complete`` event → the frame),
  against the SDK alone from its permission handler's approval to the same event; the
  difference (by rank) is what the adapter adds.
- a question's round trip in the SDK: from the SDK calling for a permission decision
  (``_execute_permission_and_respond``, which calls the handler) to the decision sent to
  the CLI (``handle_pending_permission_request``), through the adapter and the Master
  against the SDK alone with a handler that approves at once.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from copilot import CopilotClient, CopilotSession, PermissionRequest, RuntimeConnection, ToolSet
from copilot.generated.rpc import (
    PermissionDecision,
    PermissionDecisionApproveOnce,
    PermissionsApi,
)
from copilot.session import PermissionInvocation
from copilot.session_events import (
    AssistantMessageDeltaData,
    SessionEvent,
    SessionIdleData,
    ToolExecutionCompleteData,
)
from rawp_core_copilot._runtime import Settings, _write_tool, cli_environment

from benchmarks._model_server import ModelServer
from benchmarks._sdk_cores import Lap, Marks, OpenSdkAlone, Stopwatch, compare, mark_calls, run
from tests.copilot.conftest import installed_cli
from tests.support.llm_openai import DEFAULT_MODEL

WRITE_PROMPT = "WRITE_FILE bench.txt hi"
WAIT_S = 60.0


def _settings(cli: Path) -> Callable[[ModelServer], dict[str, Any]]:
    def settings(llm: ModelServer) -> dict[str, Any]:
        options = {"model": DEFAULT_MODEL, "base_url": llm.base_url, "cli_path": str(cli)}
        return {"core": "copilot", "core_options": options}

    return settings


class _Alone:
    """The Copilot SDK alone (asyncio only): one session of the CLI with the core's own
    ``write`` tool, its events counted and its permission requests approved at once."""

    def __init__(self) -> None:
        self.session: CopilotSession | None = None
        self._deltas = 0
        self._approved = Stopwatch()
        self._written = Lap(0.0, 0.0)
        self._idle = asyncio.Event()

    async def warm(self) -> None:
        await self._turn("Say hello.")

    async def stream(self, deltas: int) -> int:
        """Its ``assistant.message_delta`` events of the same stream."""
        self._deltas = 0
        await self._turn(f"SLOW_STREAM {deltas} 0")
        return self._deltas

    async def permission_turn(self) -> Lap:
        """From the approval its permission handler returns to the write's
        ``tool.execution_complete`` event."""
        await self._turn(WRITE_PROMPT)
        return self._written

    async def _turn(self, prompt: str) -> None:
        """Send ``prompt`` and wait for the session to be idle (as the core does)."""
        assert self.session is not None
        self._idle = asyncio.Event()
        await self.session.send(prompt)
        await asyncio.wait_for(self._idle.wait(), WAIT_S)

    def on_event(self, event: SessionEvent) -> None:
        if isinstance(event.data, AssistantMessageDeltaData):
            self._deltas += 1
        elif isinstance(event.data, ToolExecutionCompleteData):
            self._written = self._approved.lap()
        elif isinstance(event.data, SessionIdleData):
            self._idle.set()

    async def on_permission(
        self, request: PermissionRequest, invocation: PermissionInvocation
    ) -> PermissionDecision:
        del request, invocation
        self._approved = Stopwatch()
        return PermissionDecisionApproveOnce()


def _marked() -> Marks:
    """The SDK's pause: it calls for the handler's decision; the answer reaching it: the
    decision sent to the CLI."""
    marks = Marks()
    mark_calls(CopilotSession, "_execute_permission_and_respond", lambda *_, **__: marks.asked())
    mark_calls(
        PermissionsApi, "handle_pending_permission_request", lambda *_, **__: marks.answered()
    )
    return marks


def _open_alone(cli: Path) -> OpenSdkAlone:
    @asynccontextmanager
    async def alone(llm: ModelServer, workspace: Path) -> AsyncIterator[_Alone]:
        with tempfile.TemporaryDirectory(prefix="bench-copilot-") as home:
            settings = Settings(
                model=DEFAULT_MODEL,
                base_url=llm.base_url,
                api_key="unused",
                provider_type="openai",
                wire_api="completions",
                tools=["write"],
                cli=cli,
                home=Path(home),
                workspace=workspace,
            )
            client = CopilotClient(
                connection=RuntimeConnection.for_stdio(path=str(cli)),
                env=cli_environment(settings),
                use_logged_in_user=False,
                base_directory=home,
                working_directory=str(workspace),
                log_level="error",
            )
            await client.start()
            sdk = _Alone()
            try:
                sdk.session = await client.create_session(
                    on_permission_request=sdk.on_permission,
                    model=DEFAULT_MODEL,
                    provider={
                        "type": "openai",
                        "wire_api": "completions",
                        "base_url": llm.base_url,
                        "api_key": "unused",
                    },
                    tools=[_write_tool(workspace)],
                    available_tools=ToolSet().add_custom("*"),
                    streaming=True,
                    working_directory=str(workspace),
                    on_event=sdk.on_event,
                )
                yield sdk
            finally:
                if sdk.session is not None:
                    await sdk.session.disconnect()
                await client.stop()

    return alone


async def main(quick: bool) -> None:
    cli = installed_cli()
    assert cli is not None
    deltas, turns = (500, 15) if quick else (2_000, 100)
    await compare(
        "copilot",
        _settings(cli),
        _open_alone(cli),
        deltas=deltas,
        turns=turns,
        write_prompt=WRITE_PROMPT,
        marks=_marked(),
    )


if __name__ == "__main__":
    if installed_cli() is None:
        print("the Copilot CLI is not installed (scripts/install-copilot): nothing measured")
        sys.exit(0)
    run(__doc__, "copilot", main)
