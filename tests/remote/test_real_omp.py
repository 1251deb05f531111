"""One real omp session (``scripts/install-peers``) on a worker over NATS, offline
against the scripted LLM."""

from __future__ import annotations

from pathlib import Path

import pytest

from rawp_adapters import AgentMetadata
from rawp_adapters.frames import SessionCapabilitiesFrame, ToolInvokeResultFrame
from rawp_adapters.remote import RemoteSessions
from rawp_adapters.testing import check_frames
from tests.remote.cluster import NatsServer, running_worker
from tests.remote.masters import driving
from tests.support.llm_openai import DEFAULT_TEXT, ScriptedOpenAI
from tests.support.peers import OMP_VERSION, make_peer, peer_available

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.peers,
    pytest.mark.skipif(not peer_available("omp"), reason="omp: run scripts/install-peers"),
]

TIMEOUT = 60.0
"""Bound of every wait on the real agent (a cold start under load takes seconds)."""


async def test_a_real_omp_session_on_a_worker_answers_and_runs_a_tool(
    nats: NatsServer, prefix: str, tmp_path: Path
) -> None:
    with ScriptedOpenAI() as llm:
        agent = make_peer("omp", llm_base_url=llm.base_url, home=tmp_path / "omp")
        metadata = AgentMetadata(
            adapter_type="process",
            settings={
                "command": agent.argv,
                "agent_name": "omp",
                "env_policy": "allowlist",
                "env_allowlist": [],
                "env": agent.env,
            },
        )
        async with (
            running_worker(nats.url, prefix),
            await RemoteSessions.connect(nats.url, prefix=prefix) as remote,
        ):
            session = await remote.open(metadata, workspace=str(agent.cwd))
            async with driving(session, timeout=TIMEOUT) as d:
                text = await d.prompt("Say hello.")
                bash = await d.prompt("RUN_BASH echo hi")
                await d.end()
    caps = d.of_type(SessionCapabilitiesFrame)[0]
    assert caps.payload.agent is not None
    assert caps.payload.agent.version == OMP_VERSION
    assert text.text == DEFAULT_TEXT
    assert "hi" in str(bash.of_type(ToolInvokeResultFrame)[0].payload.output)
    assert check_frames(d.transcript) == []


async def test_bash_of_a_real_omp_on_a_worker_sees_no_secret_of_the_worker_only_its_allowlist(
    nats: NatsServer, prefix: str, tmp_path: Path
) -> None:
    password, deploy_key = "worker-password-1234", "deploy-key-5678"
    with ScriptedOpenAI() as llm:
        agent = make_peer("omp", llm_base_url=llm.base_url, home=tmp_path / "omp")
        # HOME and PATH only from the worker, by the default allowlist
        named = {k: v for k, v in agent.env.items() if k not in ("HOME", "PATH")}
        metadata = AgentMetadata(
            adapter_type="process",
            settings={"command": agent.argv, "agent_name": "omp", "env": named},
        )
        worker_env = {
            "NATS_PASSWORD": password,
            "DEPLOY_KEY": deploy_key,
            "HOME": str(agent.home),
            "PATH": agent.env["PATH"],
        }
        async with (
            running_worker(nats.url, prefix, env=worker_env),
            await RemoteSessions.connect(nats.url, prefix=prefix) as remote,
        ):
            session = await remote.open(metadata, workspace=str(agent.cwd))
            async with driving(session, timeout=TIMEOUT) as d:
                turn = await d.prompt("RUN_BASH env")
                await d.end()
    dumped = str(turn.of_type(ToolInvokeResultFrame)[0].payload.output)
    assert password not in dumped
    assert deploy_key not in dumped
    assert f"HOME={agent.home}" in dumped
    assert f"PATH={agent.env['PATH']}" in dumped
