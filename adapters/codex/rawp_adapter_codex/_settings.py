"""Settings of the Codex adapter (``adapter_type: "process"``, ``settings.protocol: "codex"``)."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import Field, field_validator

from rawp_adapters import McpServer, McpServers
from rawp_adapters.processes import AgentProcessSettings

DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024
"""A ``thread/resume`` answer carries the whole history on one line."""

ApprovalPolicy = Literal["untrusted", "on-request", "never"]
SandboxMode = Literal["read-only", "workspace-write", "danger-full-access"]


class CodexSettings(AgentProcessSettings):
    """How one ``codex app-server`` is started and driven. The environment and stop
    settings are :class:`AgentProcessSettings`'s."""

    command: list[str] = Field(
        default_factory=lambda: ["codex", "app-server"],
        min_length=1,
        description="The app-server's command line; each `config` entry is added as `-c`.",
    )
    config: dict[str, Any] = Field(
        default_factory=dict,
        description="Codex configuration overrides, each passed as `-c key=<value as TOML>`, "
        'e.g. `{"model_provider": "fake", "model_providers.fake.base_url": '
        '"http://127.0.0.1:8000/v1", "model_providers.fake.wire_api": "responses", '
        '"model_providers.fake.env_key": "FAKE_KEY"}`.',
    )
    codex_home: str | None = Field(
        default=None,
        description="CODEX_HOME of the app-server (its threads, config, logs). None: a "
        "directory of the session's own, removed at its end (nothing touches the user's "
        "~/.codex); set it to resume a thread of an earlier session.",
    )
    model: str | None = Field(default=None, description="The thread's model; None: codex's.")
    reasoning_effort: str | None = Field(
        default=None, description="The first turn's reasoning effort; None: the model's default."
    )
    approval_policy: ApprovalPolicy = Field(
        default="untrusted",
        description="When codex asks before it runs a command or changes files: `untrusted` "
        "asks for every command codex does not know to be read-only.",
    )
    sandbox: SandboxMode = Field(
        default="workspace-write", description="Codex's sandbox for the commands it runs."
    )
    resume_thread_id: str | None = Field(
        default=None,
        description="Resume this thread with `thread/resume` (it must be in `codex_home`); "
        "otherwise `thread/start`.",
    )
    agent_name: str = Field(default="codex", description="Name reported in session.capabilities.")
    interaction_timeout_ms: int | None = Field(
        default=None, ge=1, description="Deadline of approval questions; None: the session's."
    )
    mcp_servers: McpServers = []
    start_timeout: float = Field(
        default=60.0, gt=0, description="Seconds for `initialize` and `thread/start|resume`."
    )
    request_timeout: float = Field(
        default=30.0, gt=0, description="Seconds for `turn/*` and `model/list` requests."
    )
    compact_timeout: float = Field(
        default=300.0, gt=0, description="Seconds for a compaction (`thread/compact/start`)."
    )
    max_line_bytes: int = Field(
        default=DEFAULT_MAX_LINE_BYTES,
        ge=1024,
        description="Longer stdout lines are skipped and reported as FRAME_TOO_LARGE.",
    )
    stdin_close_grace: float = Field(
        default=2.0, ge=0, description="Seconds to exit after stdin is closed, before SIGTERM."
    )

    @field_validator("config")
    @classmethod
    def _config_is_toml(cls, config: dict[str, Any]) -> dict[str, Any]:
        for value in config.values():
            toml_value(value)
        return config

    def argv(self) -> list[str]:
        """``command`` with every ``config`` entry as ``-c key=value``, then each MCP
        server as ``-c mcp_servers.<name>={…}``."""
        argv = list(self.command)
        for key, value in self.config.items():
            argv += ["-c", f"{key}={toml_value(value)}"]
        for server in self.mcp_servers:
            argv += ["-c", f"mcp_servers.{server.name}={toml_value(mcp_server_config(server))}"]
        return argv


def mcp_server_config(server: McpServer) -> dict[str, Any]:
    """Codex's ``mcp_servers.<name>`` table: ``command``/``args``/``env`` for stdio,
    ``url``/``http_headers`` for streamable HTTP."""
    if server.command is not None:
        return {"command": server.command, "args": server.args, "env": server.env}
    return {"url": server.url, "http_headers": server.headers}


def toml_value(value: Any) -> str:
    """A TOML literal for ``value`` (strings, numbers, booleans, arrays, inline tables)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a JSON string is a TOML basic string
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        items = ", ".join(f"{json.dumps(str(k))} = {toml_value(v)}" for k, v in value.items())
        return "{" + items + "}"
    raise ValueError(f"no TOML value for {value!r}")
