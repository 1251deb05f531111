"""Which MCP servers the copilot core says the CLI started, from the CLI's events and
status list (sans IO): a stdio server whose tools are loaded has started though its
status may stay pending."""

from __future__ import annotations

from copilot.generated.rpc import MCPServer
from copilot.session_events import (
    SessionMcpServerStatusChangedData,
    SessionMcpServerToolsLoadedData,
)
from rawp_core_copilot._mcp import McpStartup, mcp_config

from rawp_adapters import McpServer


def status(name: str, state: str, error: str | None = None) -> SessionMcpServerStatusChangedData:
    return SessionMcpServerStatusChangedData.from_dict(
        {"serverName": name, "status": state, "error": error}
    )


def test_a_server_settles_with_its_tools_or_a_final_status_and_a_failed_one_is_refused() -> None:
    startup = McpStartup(["dead", "local", "remote"])
    startup.event(status("local", "pending"))
    startup.listed([MCPServer.from_dict({"name": "dead", "status": "failed", "error": "exit 3"})])
    startup.event(status("remote", "connected"))
    assert not startup.settled
    startup.event(
        SessionMcpServerToolsLoadedData.from_dict({"serverName": "local", "toolCount": 1})
    )
    assert startup.settled
    assert startup.refused() == {"dead": "exit 3"}


def test_a_server_not_settled_in_time_is_refused_saying_so() -> None:
    startup = McpStartup(["slow"])
    startup.event(status("slow", "pending"))
    assert startup.refused() == {"slow": "the Copilot CLI did not start it in 30 s"}


def test_a_server_is_the_sdks_stdio_or_http_config_with_every_tool() -> None:
    local = McpServer(name="l", command="srv", args=["-q"], env={"K": "v"})
    remote = McpServer(name="r", url="http://127.0.0.1:9/mcp", headers={"X": "s"})
    assert mcp_config(local) == {
        "type": "stdio",
        "command": "srv",
        "args": ["-q"],
        "env": {"K": "v"},
        "tools": ["*"],
    }
    assert mcp_config(remote) == {
        "type": "http",
        "url": "http://127.0.0.1:9/mcp",
        "headers": {"X": "s"},
        "tools": ["*"],
    }
