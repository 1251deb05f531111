"""The Master's host tools on a real ACP agent: claude-agent-acp gets them as the
session's ``rawp`` MCP server, the catalog published after ``session/new`` reaches it
(MCP ``tools/list_changed``), and its call goes to the Master, whose answer the model
sees. Runs on asyncio only (how the adapter runs on each loop is proven elsewhere)."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import anyio
import pytest

from rawp_adapters import ClientFrame, open_session
from rawp_adapters.frames import (
    SessionCapabilitiesFrame,
    ToolInvokeRequestFrame,
    ToolInvokeResultFrame,
    TurnEndFrame,
)
from rawp_adapters.host import HostTools, allow_all, serve_host
from tests.acp.test_mcp_servers import TIMEOUT, adapter_with_mcp

pytestmark = [pytest.mark.anyio, pytest.mark.acp]

tools = HostTools()


@tools.tool()
async def lookup(word: str) -> str:
    """Look a word up in the team glossary."""
    return f"glossary says {word[::-1]}"


async def test_claude_calls_a_host_tool_published_after_the_session_started(
    anyio_backend: str, servers: dict[str, str], tmp_path: Path
) -> None:
    if anyio_backend != "asyncio":
        pytest.skip("runs on asyncio only (see the module docstring)")
    adapter, workspace = adapter_with_mcp("claude", servers, tmp_path, host_tools=True)
    frames: list[ClientFrame] = []
    with anyio.fail_after(TIMEOUT):
        async with (
            open_session(adapter, workspace=workspace) as session,
            anyio.create_task_group() as tg,
        ):

            def on_frame(frame: ClientFrame) -> None:
                frames.append(frame)
                if isinstance(frame, TurnEndFrame):
                    tg.start_soon(session.close)

            confirmed = await tg.start(
                partial(serve_host, session, tools, allow_all, on_frame=on_frame)
            )
            await session.send(
                session.control.prompt('CALL_TOOL mcp__rawp__lookup {"word": "turn"}')
            )
    assert confirmed == ["lookup"]
    (capabilities,) = [f for f in frames if isinstance(f, SessionCapabilitiesFrame)]
    assert capabilities.payload.features.host_tools
    requests = [f for f in frames if isinstance(f, ToolInvokeRequestFrame)]
    assert any(
        r.payload.executor == "master" and r.payload.input == {"word": "turn"} for r in requests
    )
    results = [f for f in frames if isinstance(f, ToolInvokeResultFrame)]
    assert any(r.payload.output == "glossary says nrut" for r in results)
    text = "".join(getattr(f.payload, "text", "") for f in frames if f.type == "agent.text.delta")
    assert "glossary says nrut" in text
