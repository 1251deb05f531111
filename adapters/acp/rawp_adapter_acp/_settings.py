"""Settings of the ACP adapter (``adapter_type: "process"``, ``settings.protocol: "acp"``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from rawp_adapters import McpServers
from rawp_adapters.processes import AgentProcessSettings

HostToolsTransport = Literal["stdio", "http"]

DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024
"""qwen-code sends a 569 KB line (its skill list); asyncio's reader default is 64 KiB."""


class AcpSettings(AgentProcessSettings):
    """How one ACP agent is started and driven. Only ``command`` is needed; the
    environment and stop settings are :class:`AgentProcessSettings`'s."""

    command: list[str] = Field(
        min_length=1,
        description='The agent\'s ACP command line, e.g. `["omp", "--mode", "acp"]` or '
        '`["node", ".../claude-agent-acp/dist/index.js"]`.',
    )
    agent_name: str | None = Field(
        default=None,
        description="Name reported in session.capabilities; default the agent's own "
        "(`initialize` agentInfo), else the binary's.",
    )
    resume_session_id: str | None = Field(
        default=None,
        description="Resume this ACP session with `session/load` (the agent must offer "
        "`loadSession`); otherwise `session/new`.",
    )
    mcp_servers: McpServers = []
    host_tools: bool = Field(
        default=False,
        description="Serve the Master's published tools (`tool.catalog.publish`) to the "
        "agent as an MCP server of the session (`rawp`, over stdio, relayed to the adapter "
        "on 127.0.0.1). A catalog published after the agent listed the tools is announced "
        "with MCP `notifications/tools/list_changed` (see `host_tools_relist_wait`).",
    )
    host_tools_transport: HostToolsTransport = Field(
        default="stdio",
        description="How the agent reaches the host tools' MCP server: `stdio` (a relay it "
        "starts) or `http` (streamable HTTP on 127.0.0.1 with a bearer token, for an agent "
        "that takes no stdio MCP server from its client: the Copilot CLI; the agent must "
        "advertise `mcpCapabilities.http`).",
    )
    host_tools_relist_wait: float = Field(
        default=5.0,
        ge=0,
        description="Seconds a `tool.catalog.publish` waits for the agent's MCP clients "
        "connected to the host tools to list the new catalog (gemini-cli re-lists in the "
        "background on `list_changed`): the prompts sent after the publication then offer "
        "the new tools. An agent that does not re-list costs this wait once per publication. "
        "Also how long a client that lists only once (codex's) waits, when it lists before "
        "the first publication, for that catalog (codex gives a server 10 s to start), and "
        "how long a prompt after the first waits for a client that has not listed yet.",
    )
    modes: dict[str, str] = Field(
        default_factory=lambda: {"plan": "plan", "default": "default"},
        description="The agent's mode id for each DPS mode (`session/set_mode`).",
    )
    resend_stale_prompt: bool = Field(
        default=True,
        description="A prompt right after a cancelled turn that the agent answers at once "
        "with `end_turn`, no update and no usage (claude-agent-acp answers with the "
        "cancelled turn's leftover result and holds the prompt's reply back until another "
        "prompt comes) is followed, once and within the same turn, by `stale_prompt_text`, "
        "so that the turn gets the reply to its prompt.",
    )
    stale_prompt_text: str | None = Field(
        default="(continue)",
        description="What is sent to fetch the held-back reply after a stale answer (the "
        "model sees it as a user message); None sends the turn's prompt again, which "
        "repeats what it asks for (a tool call too).",
    )
    interaction_timeout_ms: int | None = Field(
        default=None, ge=1, description="Deadline of permission questions; None: the session's."
    )
    announcement_wait: float = Field(
        default=10.0,
        ge=0,
        description="Seconds a permission request of claude-agent-acp waits for the agent's "
        "`tool_call` of the same call when it overtakes it, so that the Master is asked under "
        "the tool's name (`Bash`) whatever the order; should the `tool_call` not come by then, "
        "the Master is asked under the name the request gives (the ACP kind).",
    )
    start_timeout: float = Field(
        default=60.0, gt=0, description="Seconds for `initialize` and `session/new|load`."
    )
    request_timeout: float = Field(
        default=30.0, gt=0, description="Seconds for `session/set_mode` and similar requests."
    )
    max_line_bytes: int = Field(
        default=DEFAULT_MAX_LINE_BYTES,
        ge=1024,
        description="Longer stdout lines are skipped and reported as FRAME_TOO_LARGE.",
    )
    stdin_close_grace: float = Field(
        default=0.5,
        ge=0,
        description="Seconds to exit after stdin is closed, before SIGTERM (claude-agent-acp "
        "and codex-acp never exit on end of stdin).",
    )
