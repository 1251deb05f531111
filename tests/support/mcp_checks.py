"""What every agent given the test MCP servers (a stdio one, an HTTP one and a dead one,
:func:`tests.support.mcp_server.servers_beside_a_dead_one`) must show."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from rawp_adapters.frames import AgentErrorFrame, SessionCapabilitiesFrame, ToolInvokeResultFrame
from rawp_adapters.testing import SessionDriver, TurnRecord
from tests.support.mcp_server import stamped


def call_tool(tool: str, text: str) -> str:
    """The prompt on which the scripted model calls ``tool`` with ``text``."""
    return f"CALL_TOOL {tool} {json.dumps({'text': text})}"


async def call_both_servers(
    d: SessionDriver[Any],
    local_tool: str,
    remote_tool: str,
    *,
    said: str = "",
    requests: Callable[[], list[dict[str, Any]]] | None = None,
    call: Callable[[str, str], str] = call_tool,
) -> None:
    """The model calls the stdio server's tool, then the HTTP server's (each prompt made
    by ``call``); both answer, and the dead server is named in one warning while the
    session goes on. With ``requests`` (the scripted model's recorded request bodies),
    each answer is shown to have reached the model."""
    local = await d.prompt(call(local_tool, "abc"))
    remote = await d.prompt(call(remote_tool, "xyz"))
    (capabilities,) = d.of_type(SessionCapabilitiesFrame)
    (warning,) = d.of_type(AgentErrorFrame)
    assert capabilities.payload.features.mcp_servers == ["local", "remote"]
    assert warning.payload.severity == "warning"
    assert "'dead'" in warning.payload.message
    for turn, text in ((local, "abc"), (remote, "xyz")):
        _answered(turn, f"{said}{stamped(text)}")
        if requests is not None:
            assert any(stamped(text) in json.dumps(body) for body in requests())


def _answered(turn: TurnRecord, text: str) -> None:
    (result,) = turn.of_type(ToolInvokeResultFrame)
    assert not result.payload.is_error
    assert text in turn.text
