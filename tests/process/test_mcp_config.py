"""The session's MCP servers as omp is given them (sans IO): its ``.mcp.json``, the
``-e`` root on its command line, and which servers its ``get_state`` shows tools of."""

from __future__ import annotations

from pathlib import Path

from rawp_adapter_process import ProcessAdapter
from rawp_adapter_process._launch import rpc_argv
from rawp_adapter_process._mcp import loaded, mcp_json, tool_prefix

from rawp_adapters import McpServer


def test_stdio_and_http_servers_are_omps_mcp_json() -> None:
    servers = [
        McpServer(name="local", command="srv", args=["-q"], env={"K": "v"}),
        McpServer(name="remote", url="http://127.0.0.1:9/mcp", headers={"X": "s"}),
    ]
    assert mcp_json(servers) == {
        "mcpServers": {
            "local": {"command": "srv", "args": ["-q"], "env": {"K": "v"}},
            "remote": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"X": "s"}},
        }
    }


def test_the_config_directory_is_an_extension_root_after_the_callers_arguments() -> None:
    settings = ProcessAdapter.from_settings(
        {"command": ["omp", "--mode", "rpc"], "approval": "none", "extra_args": ["--no-lsp"]}
    ).settings
    assert rpc_argv(settings, Path("/tmp/d")) == [
        "omp",
        "--mode",
        "rpc",
        "--no-lsp",
        "-e",
        "/tmp/d",
    ]
    assert rpc_argv(settings) == ["omp", "--mode", "rpc", "--no-lsp"]


def test_a_server_is_loaded_once_a_tool_of_its_sanitized_name_shows() -> None:
    assert tool_prefix("My-Server.2") == "mcp__my_server_2_"
    state = '{"systemPrompt": ["- xd://mcp__local_stamp_local \\u2014 Stamp"], "dumpTools": []}'
    assert loaded(["dead", "local", "remote"], state) == ["local"]
