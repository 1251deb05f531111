"""The codex adapter's settings: the command line they make, and what they refuse."""

from __future__ import annotations

import pytest
from rawp_adapter_codex import CodexAdapter

from rawp_adapters import AgentMetadata, InvalidSettingsError, create_adapter


def test_each_config_entry_is_a_dash_c_override_with_its_value_as_toml() -> None:
    adapter = create_adapter(
        AgentMetadata(
            adapter_type="process",
            settings={
                "protocol": "codex",
                "config": {
                    "model_provider": 'my "own"',
                    "model_providers.mine.request_max_retries": 0,
                    "analytics.enabled": False,
                    "sandbox_workspace_write.writable_roots": ["/a", "/b"],
                    "shell_environment_policy": {"inherit": "core"},
                },
            },
        )
    )
    assert isinstance(adapter, CodexAdapter)
    assert adapter.settings.argv() == [
        "codex",
        "app-server",
        "-c",
        'model_provider="my \\"own\\""',
        "-c",
        "model_providers.mine.request_max_retries=0",
        "-c",
        "analytics.enabled=false",
        "-c",
        'sandbox_workspace_write.writable_roots=["/a", "/b"]',
        "-c",
        'shell_environment_policy={"inherit" = "core"}',
    ]


def test_a_config_value_with_no_toml_form_is_refused_with_the_settings() -> None:
    with pytest.raises(InvalidSettingsError, match="no TOML value"):
        CodexAdapter.from_settings({"config": {"model": None}})


def test_each_mcp_server_is_a_dash_c_table_of_codex_mcp_servers() -> None:
    servers = [
        {"name": "local", "command": "srv", "args": ["-q"], "env": {"K": "v"}},
        {"name": "remote", "url": "http://127.0.0.1:9/mcp", "headers": {"X-T": "s"}},
    ]
    adapter = CodexAdapter.from_settings({"mcp_servers": servers})
    assert adapter.settings.argv()[2:] == [
        "-c",
        'mcp_servers.local={"command" = "srv", "args" = ["-q"], "env" = {"K" = "v"}}',
        "-c",
        'mcp_servers.remote={"url" = "http://127.0.0.1:9/mcp", "http_headers" = {"X-T" = "s"}}',
    ]
