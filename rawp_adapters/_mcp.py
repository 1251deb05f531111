"""MCP servers a Master names for a session: one settings shape every adapter takes
(its settings' ``mcp_servers``) and gives its agent in the agent's own terms."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from rawp_adapters._frames import AgentError, AgentErrorCode


class McpServer(BaseModel):
    """One MCP server: a stdio ``command`` (with ``args``, ``env``) the agent starts, or
    a streamable HTTP ``url`` (with ``headers``) it connects to."""

    # Defaults, not default_factory=list: pydantic would read the builtin's text
    # signature, which compiles tokenize's patterns (at each ``serve --stdio`` start).
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(
        min_length=1,
        pattern=r"^[A-Za-z0-9_-]+$",
        description="The server's name, unique in the session (agents prefix its tools "
        "with it or show it beside them).",
    )
    command: str | None = Field(default=None, description="The stdio server's program.")
    args: list[str] = Field(default=[], description="Its arguments (stdio).")
    env: dict[str, str] = Field(
        default={}, description="Variables added to its environment (stdio)."
    )
    url: str | None = Field(
        default=None, description="The streamable HTTP server's URL (`http://` or `https://`)."
    )
    headers: dict[str, str] = Field(
        default={}, description="Headers of every request to it (HTTP)."
    )

    @model_validator(mode="after")
    def _one_transport(self) -> McpServer:
        if (self.command is None) == (self.url is None):
            raise ValueError(f"MCP server {self.name!r} needs either command or url, not both")
        if self.url is not None:
            if self.args or self.env:
                raise ValueError(f"MCP server {self.name!r}: args and env are for a command")
            if not self.url.startswith(("http://", "https://")):
                raise ValueError(f"MCP server {self.name!r}: url must be http(s): {self.url!r}")
        elif self.headers:
            raise ValueError(f"MCP server {self.name!r}: headers are for a url")
        return self

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return "stdio" if self.command is not None else "http"


def _unique_names(servers: list[McpServer]) -> list[McpServer]:
    names = [s.name for s in servers]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"MCP server names must be unique: {', '.join(twice)}")
    return servers


McpServers = Annotated[
    list[McpServer],
    AfterValidator(_unique_names),
    Field(
        description="MCP servers the agent gets for this session (stdio `command` with "
        "`args`/`env`, or HTTP `url` with `headers`); `session.capabilities` "
        "`features.mcp_servers` names those it was given, an `agent.error` warning each one "
        "it could not take."
    ),
]
"""The type of an adapter settings' ``mcp_servers`` field (``mcp_servers: McpServers = []``)."""


def mcp_server_refused(name: str, reason: str) -> AgentError:
    """The ``agent.error`` warning for a server the agent did not get: the session goes
    on with the others."""
    return AgentError(
        severity="warning",
        error_code=AgentErrorCode.AGENT_ERROR,
        message=f"MCP server {name!r} is not available to the agent: {reason}",
    )
