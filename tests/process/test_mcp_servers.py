"""The session's MCP servers on the real omp (an ``.mcp.json`` in a directory of the
session's own, given as ``-e``): a stdio server and a streamable HTTP one (with its
header) whose tools the scripted model calls the way omp offers them, by writing their
JSON arguments to their ``xd://`` device, beside a server that exits at once, reported
while the others work; the tools' answers reach the Master in the writes' results; the
directory is gone after the session.

One event loop only: the dead server costs the whole ``mcp_start_timeout`` wait (omp
tells nothing of a server that failed), and how the adapter runs on each loop does not
depend on MCP (the other process tests prove both)."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from rawp_adapters.frames import ToolInvokeResultFrame
from rawp_adapters.testing import allow_all, drive
from tests.process.real_peers import TIMEOUT, only, peer_adapter
from tests.support.llm_openai import TOOL_SAID, ScriptedOpenAI
from tests.support.mcp_checks import call_both_servers
from tests.support.mcp_server import (
    LOCAL_TOOL,
    REMOTE_TOOL,
    SECRET,
    http_server,
    servers_beside_a_dead_one,
    stamped,
)
from tests.support.peers import PeerName

pytestmark = [pytest.mark.anyio, pytest.mark.peers]

MCP_START_TIMEOUT = 12.0
"""Long enough for the stdio server (a Python process) to start under load."""


@pytest.fixture
def llm() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI() as server:
        yield server
    assert server.violations == []


def write_to_device(tool: str, text: str) -> str:
    """The prompt on which the scripted model writes ``text`` to the tool's device."""
    arguments = {"path": f"xd://{tool}", "content": json.dumps({"text": text})}
    return f"CALL_TOOL write {json.dumps(arguments)}"


@pytest.mark.parametrize("name", only("omp"))
async def test_omp_calls_mcp_tools_over_stdio_and_http_and_a_dead_server_is_reported(
    name: PeerName,
    anyio_backend: str,
    llm: ScriptedOpenAI,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if anyio_backend != "trio":
        pytest.skip("runs on trio only (see the module docstring)")
    temp = tmp_path / "adapter-tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))  # where the adapter writes .mcp.json
    with http_server(header=SECRET, tool=REMOTE_TOOL) as url:
        adapter, workspace = peer_adapter(
            name,
            llm,
            tmp_path,
            mcp_servers=servers_beside_a_dead_one(url),
            mcp_start_timeout=MCP_START_TIMEOUT,
        )
        async with drive(adapter, workspace=workspace, policy=allow_all, timeout=TIMEOUT) as d:
            await call_both_servers(
                d,
                f"mcp__local_{LOCAL_TOOL}",
                f"mcp__remote_{REMOTE_TOOL}",
                said=TOOL_SAID,
                requests=lambda: llm.requests,
                call=write_to_device,
            )
            assert len(list(temp.glob("rawp-omp-mcp-*/.mcp.json"))) == 1
    results = [result.payload.output or "" for result in d.of_type(ToolInvokeResultFrame)]
    assert [stamped("abc") in results[0], stamped("xyz") in results[1]] == [True, True]
    assert list(temp.glob("rawp-omp-mcp-*")) == []
