"""Settings of the process adapter (``AgentMetadata.settings`` of ``adapter_type: "process"``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from rawp_adapters import McpServers
from rawp_adapters.processes import AgentProcessSettings

DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024

ALL_TOOLS = "*"
"""In ``permission_tools``: gate every tool."""

DEFAULT_PERMISSION_TOOLS = (
    "bash",
    "edit",
    "write",
    "ast_edit",
    "eval",
    "python",
    "notebook",
    "ssh",
)
"""The tools of the xcsh family that change state (run code, write files, reach hosts).
Reading and searching tools (``read``, ``grep``, ``glob``/``find``, ``ls``) run ungated."""

SESSION_ID_PLACEHOLDER = "{session_id}"
PROMPT_PLACEHOLDER = "{prompt}"


class SingleTurnSettings(BaseModel):
    """How the agent is run once per prompt (``single_turn_process``, §18).

    Each prompt runs ``command + model args + extra_args + resume_args + prompt_args``;
    ``resume_args`` are left out for the first prompt and get the agent's session id
    (from the ``{"type": "session", "id": …}`` header line) in place of ``{session_id}``.
    An argument equal to ``{prompt}`` is replaced by the prompt text.
    """

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    command: list[str] = Field(
        default_factory=lambda: ["xcsh", "--mode", "json"],
        min_length=1,
        description="A one-shot mode that prints the agent's events as JSON lines and exits.",
    )
    resume_args: list[str] = Field(
        default_factory=lambda: ["--session", SESSION_ID_PLACEHOLDER],
        description="Arguments that continue the agent's session from the previous prompt.",
    )
    prompt_args: list[str] = Field(
        default_factory=lambda: [PROMPT_PLACEHOLDER],
        description="Where the prompt goes on the command line.",
    )


class ProcessSettings(AgentProcessSettings):
    """Settings of the process adapter. Every field has a default that runs ``xcsh``;
    the environment and stop settings are :class:`AgentProcessSettings`'s."""

    command: list[str] = Field(
        default_factory=lambda: ["xcsh", "--mode", "rpc"],
        min_length=1,
        description="The agent's RPC command line (xcsh, omp or pi in `--mode rpc`).",
    )
    agent_name: str | None = Field(
        default=None, description="Name reported in session.capabilities; default the binary's."
    )
    mcp_servers: McpServers = []
    mcp_start_timeout: float = Field(
        default=10.0,
        gt=0,
        description="Seconds the start waits for omp to load the tools of each MCP server "
        "(omp says nothing of a server that fails: those without tools by then are named "
        "in warnings).",
    )
    model: str | None = Field(default=None, description="Passed as `--model <model>`.")
    provider: str | None = Field(default=None, description="Passed as `--provider <provider>`.")
    extra_args: list[str] = Field(
        # Not the builtin ``list``: pydantic would read its text signature, which compiles
        # tokenize's patterns (milliseconds at each ``serve --stdio`` start).
        default_factory=lambda: [],  # noqa: PIE807
        description="Appended to the command line.",
    )
    approval: Literal["extension", "omp-builtin", "none"] = Field(
        default="extension",
        description="Where permission requests come from: the bundled `-e` extension, omp's "
        "`--approval-mode`, or nowhere (tools run ungated).",
    )
    permission_tools: list[str] = Field(
        default_factory=lambda: list(DEFAULT_PERMISSION_TOOLS),
        description="Tools that need the Master's permission, in any case; `*` (or a list "
        "holding it) means every tool, empty means none. A string is read as a comma-separated "
        "list.",
    )
    interaction_timeout_ms: int | None = Field(
        default=None,
        ge=1,
        description="How long a dialog waits for the Master (then deny); None: the "
        "session's interaction deadline (`SessionOptions.interaction_timeout_ms`).",
    )
    max_line_bytes: int = Field(
        default=DEFAULT_MAX_LINE_BYTES,
        ge=1024,
        description="Longer stdout lines are skipped and reported as FRAME_TOO_LARGE.",
    )
    ready_probe: Literal["auto", "ready-frame", "get-state"] = Field(
        default="auto",
        description="What says the agent is ready: its `ready` frame (xcsh, omp), an answer "
        "to `get_state` (pi), or whichever comes first.",
    )
    ready_timeout: float = Field(default=45.0, gt=0, description="Seconds to become ready.")
    version_probe: Literal["known", "always", "never"] = Field(
        default="known",
        description="When `command` is run once more with `--version` to learn the agent's "
        "version (if its ready frame names none): `known` only for omp, pi and xcsh (by their "
        "executable or npm package), `always` for any command (confined like the agent), "
        "`never`.",
    )
    command_timeout: float = Field(
        default=30.0,
        gt=0,
        description="Seconds an RPC command may take to be answered; also how long the "
        "session's start waits for the agent to say what it can once it is ready (an agent "
        "that answers no command starts after it, taken to be able to do none of it).",
    )
    compact_timeout: float = Field(
        default=300.0, gt=0, description="Seconds a manual compaction may take."
    )
    stdin_close_grace: float = Field(
        default=0.25,
        ge=0,
        description="Seconds to exit after stdin is closed, before SIGTERM. omp and pi exit "
        "in 30-65 ms when idle; kept short so a stubborn agent is gone in about 5 s.",
    )
    descendant_poll_interval: float = Field(
        default=1.0,
        gt=0,
        description="How often the agent's process tree is recorded while a turn runs, so "
        "that tool processes that leave it are still killed at the end.",
    )
    single_turn: SingleTurnSettings = Field(
        default_factory=SingleTurnSettings,
        description="Used instead of `command` when the adapter runs one process per prompt.",
    )

    @field_validator("permission_tools", mode="before")
    @classmethod
    def _split_tool_names(cls, value: object) -> object:
        """``"*"`` or ``"bash,edit"`` (as ``--setting permission_tools=*`` gives it)."""
        if isinstance(value, str):
            return [name.strip() for name in value.split(",") if name.strip()]
        return value
