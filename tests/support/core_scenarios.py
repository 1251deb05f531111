"""The SDK cores that exist as plugins (openai-agents, pydantic-ai, copilot), each on the
project's scripted Chat Completions server, for the scenarios every one of them must
pass (``tests/sdk_cores/``). Each core says how it is set up against the server and
what ``session.capabilities`` must tell of it."""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from rawp_adapter_sdk import SdkAdapter

from rawp_adapters import AgentMetadata, ClientFrame, SessionOptions
from rawp_adapters.frames import (
    ToolCatalogUpdatedFrame,
    ToolInvokeRequestFrame,
    TurnEndFrame,
    TurnStartFrame,
)
from rawp_adapters.testing import SessionDriver
from tests.cli.conftest import Bridge
from tests.copilot.conftest import installed_cli
from tests.support.llm_openai import (
    Part,
    Reply,
    ScriptedOpenAI,
    ToolCall,
    last_user_text,
    trailing_tool_results,
)
from tests.support.readme_checks import PRINTED_URL, readme_check, run_check

ECHO = {
    "name": "echo",
    "description": "Says the text back.",
    "input_schema": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
}
"""A tool the Master publishes."""
CALL_ECHO = 'CALL_TOOL echo {"text": "hi"}'


@dataclass(frozen=True)
class ScriptedCore:
    """An SDK core as the scenarios drive it."""

    name: str
    options: Callable[[ScriptedOpenAI], dict[str, Any]]
    """Its ``core_options`` against the scripted server (no HTTP retries)."""
    version: Callable[[], str]
    """What ``session.capabilities`` must give as the agent's version."""
    features: frozenset[str]
    """The features ``session.capabilities`` must report true."""

    def settings(self, llm: ScriptedOpenAI, **options: Any) -> dict[str, Any]:
        """The sdk adapter's settings for this core on ``llm``, ``options`` added to its
        ``core_options``."""
        return {"core": self.name, "core_options": self.options(llm) | options}

    def adapter(self, llm: ScriptedOpenAI, **options: Any) -> SdkAdapter:
        return SdkAdapter.from_settings(self.settings(llm, **options))

    def agent(self, llm: ScriptedOpenAI) -> AgentMetadata:
        """The core as an installed agent (a sub-agent's, say)."""
        return AgentMetadata(adapter_type="sdk", settings=self.settings(llm))


def _version(distribution: str, prefix: str = "") -> Callable[[], str]:
    return lambda: prefix + importlib.metadata.version(distribution)


def _openai_agents(llm: ScriptedOpenAI) -> dict[str, Any]:
    return {"base_url": llm.base_url, "api_key": "scripted", "model": llm.model, "max_retries": 0}


def _pydantic_ai(llm: ScriptedOpenAI) -> dict[str, Any]:
    return {"base_url": llm.base_url, "model": llm.model, "max_retries": 0}


def _copilot(llm: ScriptedOpenAI) -> dict[str, Any]:
    cli = installed_cli()
    if cli is None:
        pytest.skip("the Copilot CLI is not installed (scripts/install-copilot installs it)")
    return {"base_url": llm.base_url, "model": llm.model, "cli_path": str(cli)}


COPILOT_CLI_VERSION = "1.0.102"
_TOOLS_AND_QUESTIONS = {"thinking", "tool_events", "permission_requests", "abort", "host_tools"}

CORES = (
    ScriptedCore(
        "openai-agents",
        _openai_agents,
        version=_version("openai-agents", "openai-agents "),
        features=frozenset(_TOOLS_AND_QUESTIONS | {"model_change", "model_list"}),
    ),
    ScriptedCore(
        "pydantic-ai",
        _pydantic_ai,
        version=_version("pydantic-ai-slim", "pydantic-ai-slim "),
        features=frozenset(_TOOLS_AND_QUESTIONS | {"model_change", "model_list"}),
    ),
    ScriptedCore(
        "copilot",
        _copilot,
        version=lambda: (
            f"github-copilot-sdk {importlib.metadata.version('github-copilot-sdk')}; "
            f"@github/copilot {COPILOT_CLI_VERSION}"
        ),
        features=frozenset(
            _TOOLS_AND_QUESTIONS
            | {"model_change", "model_list", "steering", "follow_up", "context_compaction"}
        ),
    ),
)
"""Every SDK core plugin the project ships, as the scenarios drive it."""


@pytest.fixture(params=CORES, ids=[core.name for core in CORES])
def scripted_core(request: pytest.FixtureRequest) -> ScriptedCore:
    core: ScriptedCore = request.param
    return core


def turn_ends(frames: list[ClientFrame], turn_id: str) -> int:
    """How many times ``turn_id`` ended (once, in a sound session)."""
    return sum(isinstance(f, TurnEndFrame) and f.payload.turn_id == turn_id for f in frames)


def of_turn_after_its_end(frames: list[ClientFrame], turn_id: str) -> list[str]:
    """The types of the frames of ``turn_id`` that came after its (first) end."""
    end = next(
        i
        for i, f in enumerate(frames)
        if isinstance(f, TurnEndFrame) and f.payload.turn_id == turn_id
    )
    return [f.type for f in frames[end + 1 :] if getattr(f.payload, "turn_id", None) == turn_id]


async def host_call_started(d: SessionDriver[Any]) -> tuple[TurnStartFrame, ToolInvokeRequestFrame]:
    """Publish :data:`ECHO` and prompt the model to call it: the turn and the Master's
    call, still unanswered."""
    await d.send(d.control.publish_tools([ECHO]))
    await d.wait_for(ToolCatalogUpdatedFrame)
    start = await d.start_prompt(CALL_ECHO)
    request = await d.wait_for(
        ToolInvokeRequestFrame, where=lambda f: f.payload.executor == "master"
    )
    return start, request


def run_readme_check(core: str, workspace: Path, env: dict[str, str] | None = None) -> str:
    """The output of the README's ``rawp-adapters check sdk`` line of ``core``, run as
    printed against a scripted model of its own (which saw no violation)."""
    printed = readme_check("sdk", core=core)
    with ScriptedOpenAI() as llm:
        argv = [arg.replace(PRINTED_URL, llm.base_url) for arg in printed]
        out = run_check([*argv, "--workspace", str(workspace)], env=env)
        assert llm.violations == []
    return out


def files(directory: Path) -> list[str]:
    """The names in ``directory``, sorted."""
    return sorted(p.name for p in directory.iterdir())


PARALLEL_WRITES = "PARALLEL_WRITES"
"""The prompt on which :func:`parallel_writes` has the model call ``write`` twice at once."""


def parallel_writes(body: dict[str, object]) -> Reply | None:
    """A responder: on :data:`PARALLEL_WRITES` the model calls the core's ``write`` tool
    twice in one reply (``first.txt``, ``second.txt``)."""
    if PARALLEL_WRITES not in last_user_text(body) or trailing_tool_results(body):
        return None
    calls = (
        ToolCall("write", {"path": "first.txt", "content": "1"}),
        ToolCall("write", {"path": "second.txt", "content": "2"}),
    )
    return Reply(
        parts=(Part("text", ("Writing both.",)),), tool_calls=calls, finish_reason="tool_calls"
    )


NO_GRACE = SessionOptions(abort_grace=60.0)
"""The session would end an aborted turn itself only after a minute: a turn that ends
within a test's wait was ended by the core."""


async def allow_on_bridge(bridge: Bridge, seq: int) -> None:
    """Wait for the next question on the stdio ``bridge`` and allow it (frame ``seq``)."""
    asked = await bridge.until("agent.interaction.request")
    answer = {"interaction_id": asked["payload"]["interaction_id"], "decision": "allow"}
    await bridge.send("control.interaction.response", answer, seq=seq)


async def host_echo_on_bridge(bridge: Bridge, prompt_id: str, seq: int) -> dict[str, Any]:
    """On the stdio ``bridge``: publish :data:`ECHO`, prompt the model to call it, allow
    the call and answer it ``hi back`` (frames ``seq`` to ``seq + 3``); the turn's end."""
    await bridge.send("tool.catalog.publish", {"tools": [ECHO]}, seq=seq)
    await bridge.until("tool.catalog.updated")
    await bridge.send(
        "control.prompt.request", {"prompt_id": prompt_id, "text": CALL_ECHO}, seq=seq + 1
    )
    await allow_on_bridge(bridge, seq + 2)
    call = await bridge.until("tool.invoke.request", executor="master")
    result = {"invocation_id": call["payload"]["invocation_id"], "output": "hi back"}
    await bridge.send("control.tool.result", result, seq=seq + 3)
    return await bridge.until("session.turn.end")
