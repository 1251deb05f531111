"""A real omp behind the process adapter: its turn is a CLIENT ``invoke_agent`` span
(another process), named after the agent and its model, with the turn's usage, and
its gated write a tool call beside the wait for the Master's decision."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.trace import SpanKind

from rawp_adapters.testing import allow_all, drive
from tests.process.real_peers import TIMEOUT, only, peer_adapter
from tests.support.llm_openai import WRITE_FILE, ScriptedOpenAI
from tests.support.peers import MODEL_ID, OMP_VERSION, PROVIDER, PeerName
from tests.telemetry.recorded import Recorded

pytestmark = [pytest.mark.anyio, pytest.mark.peers]


@pytest.fixture(scope="module")
def llm() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI() as server:
        yield server


@pytest.mark.parametrize("name", only("omp"))
async def test_an_omp_turn_is_a_client_span_with_its_gated_write_and_permission_wait(
    name: PeerName, llm: ScriptedOpenAI, tmp_path: Path, recorded: Recorded
) -> None:
    adapter, workspace = peer_adapter(name, llm, tmp_path)
    async with drive(adapter, workspace=workspace, policy=allow_all, timeout=TIMEOUT) as d:
        await d.prompt(f"{WRITE_FILE} note.txt")
    assert (workspace / "note.txt").exists()
    turn = recorded.span("invoke_agent omp")
    attributes = turn.attributes or {}
    assert turn.kind == SpanKind.CLIENT
    assert (attributes["gen_ai.agent.version"], attributes["gen_ai.request.model"]) == (
        OMP_VERSION,
        f"{PROVIDER}/{MODEL_ID}",
    )
    input_tokens = attributes["gen_ai.usage.input_tokens"]
    assert isinstance(input_tokens, int)
    assert input_tokens > 0
    assert attributes["gen_ai.response.finish_reasons"] == ("end_turn",)
    # omp asks before it reports the call: the question is the call's sibling
    assert recorded.children(turn) == ["await_permission write", "execute_tool write"]
    permission = recorded.span("await_permission write").attributes or {}
    assert permission["rawp.interaction.decided_by"] == "master"
    call = recorded.span("execute_tool write").attributes or {}
    assert permission["gen_ai.tool.call.id"] == call["gen_ai.tool.call.id"]
