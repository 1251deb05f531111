"""The headline: the real omp (process adapter, host tools over ``set_host_tools``)
delegates through a Delegation host tool to a sub-agent on the real Claude core (SDK
adapter), offline against the scripted model servers; the sub-agent's permission
request is answered by the Master with the chain, and cancelling the parent ends the
whole tree.

The tool is published as ``delegate``, not ``Task``: omp folds a tool name that matches
one of its built-ins case-insensitively into the built-in (``Task`` becomes its own
``task``), so a host tool called ``Task`` is accepted but never offered to the model.
The scripted model behind omp calls ``delegate`` only as omp offers it (a tool of the
request, or its ``xd://`` device): ``ScriptedOpenAI.violations`` stays empty."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest

from rawp_adapters import AgentMetadata, ClientFrame
from rawp_adapters.frames import (
    InteractionRequest,
    ToolInvokeResultFrame,
    ToolInvokeStreamFrame,
    TurnEndFrame,
)
from rawp_adapters.host import DelegatedRequest, Delegation, HostTools, Reply
from tests.host.serving import Served, serve_prompt
from tests.process.real_peers import TIMEOUT, peer_adapter
from tests.support.claude import claude_env, needs_claude_sdk
from tests.support.llm_anthropic import ScriptedAnthropic
from tests.support.llm_openai import CALL_TOOL, ScriptedOpenAI, offered_tools
from tests.support.peers import peer_available

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.peers,
    pytest.mark.claude,
    pytest.mark.skipif(
        not peer_available("omp"), reason="omp is not installed: scripts/install-peers"
    ),
    needs_claude_sdk,
]


@pytest.fixture
def servers() -> Iterator[tuple[ScriptedOpenAI, ScriptedAnthropic]]:
    with ScriptedOpenAI() as llm, ScriptedAnthropic() as api:
        yield llm, api
        assert not llm.violations, "the scripted model called a tool omp did not offer"


def claude_agent(api: ScriptedAnthropic, tmp_path: Path) -> AgentMetadata:
    """The SDK adapter's Claude core against ``api``, its state under ``tmp_path``."""
    env = claude_env(api.base_url, tmp_path / "unused")
    for isolated in ("CLAUDE_CONFIG_DIR", "CLAUDE_CODE_TMPDIR", "TMPDIR"):
        del env[isolated]  # the core isolates these itself, per session
    env["HOME"] = str(tmp_path / "claude-home")
    (tmp_path / "claude-home").mkdir()
    (tmp_path / "claude-state").mkdir()
    settings = {
        "core": "claude",
        "core_options": {"env": env, "state_dir": str(tmp_path / "claude-state")},
    }
    return AgentMetadata(adapter_type="sdk", settings=settings)


TOOL = "delegate"


def task_prompt(command: str) -> str:
    """What makes the scripted model behind omp call the delegation tool, whose prompt
    makes the scripted model behind Claude run ``command`` with its Bash tool (omp's
    server calls the first ``CALL_TOOL`` of the prompt: the outer one)."""
    sub_prompt = f"{CALL_TOOL} Bash {json.dumps({'command': command})}"
    task = {"description": "run it in a sub-agent", "prompt": sub_prompt}
    return f"{CALL_TOOL} {TOOL} {json.dumps(task)}"


class Master:
    """The Master's policy (records what it is asked, allows) and the sub-agents' frames."""

    def __init__(self) -> None:
        self.asked: list[InteractionRequest] = []
        self.children: list[ClientFrame] = []

    def policy(self, request: InteractionRequest) -> Reply:
        self.asked.append(request)
        return Reply.allow()


async def delegate(
    servers: tuple[ScriptedOpenAI, ScriptedAnthropic],
    tmp_path: Path,
    master: Master,
    command: str,
    **serve: Any,
) -> Served:
    llm, api = servers
    omp, workspace = peer_adapter("omp", llm, tmp_path / "omp")
    delegation = Delegation(
        claude_agent(api, tmp_path),
        name=TOOL,
        allowed_tools=["Bash"],
        on_frame=master.children.append,
    )
    return await serve_prompt(
        omp,
        workspace,
        HostTools([delegation]),
        master.policy,
        prompt=task_prompt(command),
        timeout=TIMEOUT * 2,
        **serve,
    )


async def test_omp_delegates_to_claude_whose_permission_the_master_answers_with_the_chain(
    servers: tuple[ScriptedOpenAI, ScriptedAnthropic], tmp_path: Path
) -> None:
    master = Master()
    # Writing a file: Claude Code runs read-only commands (a bare echo) without asking.
    served = await delegate(servers, tmp_path, master, "echo delegated | tee delegated.txt")
    [request] = master.asked
    assert isinstance(request, DelegatedRequest)
    assert request.context.tool_name == "Bash"
    [result] = served.of_type(ToolInvokeResultFrame)
    [link] = request.delegation_chain
    assert link.invocation_id == result.payload.invocation_id
    assert link.agent_id == served.frames[0].session_id
    assert result.payload.output_type == "agent_result"
    assert "delegated" in result.payload.output, "Claude ran the allowed Bash and said so"
    stream = served.of_type(ToolInvokeStreamFrame)
    assert stream, "Claude's text was relayed into omp's stream"
    assert all(f.metadata and f.metadata.delegation_chain == [link] for f in stream)
    [end] = served.of_type(TurnEndFrame)
    assert end.payload.stop_reason == "end_turn"
    llm, _ = servers
    assert TOOL in offered_tools(llm.requests[0]), "omp offered the delegation tool"
    omps_next_call = llm.requests[-1]["messages"][-1]
    assert omps_next_call["role"] == "tool"
    assert "delegated" in str(omps_next_call["content"]), "omp's model got the answer"
    assert "delegated" in served.text
    assert (tmp_path / "omp" / "workspace" / "delegated.txt").read_text() == "delegated\n"
    assert master.children[-1].type == "session.closed"


@contextlib.asynccontextmanager
async def signalled(fifo: Path) -> AsyncIterator[anyio.Event]:
    """An event set once something writes to the named pipe ``fifo`` (made here)."""
    os.mkfifo(fifo)
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    written = anyio.Event()

    async def wait() -> None:
        await anyio.wait_readable(fd)
        written.set()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(wait)
            yield written
            tg.cancel_scope.cancel()
    finally:
        os.close(fd)


def running_in(workspace: Path) -> list[psutil.Process]:
    """Live processes working in ``workspace`` (omp, the Claude CLI, its Bash command)."""
    found = []
    for process in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            if process.cwd() == str(workspace) and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
    return found


async def test_cancelling_omps_turn_ends_the_claude_sub_agent_and_its_processes(
    servers: tuple[ScriptedOpenAI, ScriptedAnthropic], tmp_path: Path
) -> None:
    master = Master()
    workspace = tmp_path / "omp" / "workspace"
    workspace.mkdir(parents=True)
    tree: dict[psutil.Process, str] = {}  # each with its command line
    async with signalled(workspace / "started") as started:

        async def abort_once_bash_runs() -> None:
            await started.wait()
            tree.update((p, " ".join(p.cmdline())) for p in running_in(workspace))
            bash_runs.set()

        bash_runs = anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(abort_once_bash_runs)
            served = await delegate(
                servers, tmp_path, master, "echo > started && sleep 30", abort_on=bash_runs
            )
    [request] = master.asked
    assert isinstance(request, DelegatedRequest)
    [result] = served.of_type(ToolInvokeResultFrame)
    assert result.payload.resolution == "cancelled"
    [end] = served.of_type(TurnEndFrame)
    assert end.payload.stop_reason == "cancelled"
    assert master.children[-1].type == "session.closed"
    assert any("claude" in command for command in tree.values()), "the Claude CLI ran"
    assert any("sleep 30" in command for command in tree.values()), "its Bash ran"
    assert not [p for p in tree if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not running_in(workspace), "nothing of the tree is left"
