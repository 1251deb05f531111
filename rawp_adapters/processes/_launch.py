"""What an agent process starts with: the settings every such adapter shares, its
environment (the ``RAWP_*`` variables always win) and its working directory."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import Field

from rawp_adapters._adapter import AdapterSettings
from rawp_adapters._errors import StartFailed
from rawp_adapters._frames import DPS_VERSION

SESSION_ID_VAR = "RAWP_SESSION_ID"
"""Carries the session's id to the agent and marks its processes (see :data:`Marker`)."""

DEFAULT_ENV_ALLOWLIST = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TERM",
    "TMPDIR",
)
"""What ``env_policy: allowlist`` keeps by default."""


class AgentProcessSettings(AdapterSettings):
    """Base of the settings of an adapter that runs its agent as a child process: the
    agent's environment (see :func:`agent_environment`) and how it is stopped."""

    env_policy: Literal["inherit", "allowlist"] = Field(
        default="inherit",
        description="`inherit` passes the parent's environment; `allowlist` only `env_allowlist`.",
    )
    env_allowlist: list[str] = Field(
        default_factory=lambda: list(DEFAULT_ENV_ALLOWLIST),
        description="Variables kept from the parent's environment under `allowlist`.",
    )
    env: dict[str, str] = Field(
        default_factory=dict,
        description="Extra variables, applied after the policy (RAWP_* variables still win).",
    )
    sigterm_grace: float = Field(
        default=5.0, ge=0, description="Seconds to exit after SIGTERM, before SIGKILL."
    )
    stderr_tail_bytes: int = Field(
        default=8192, ge=0, description="How much of the agent's stderr error frames quote."
    )

    def env_notices(self) -> list[str]:
        """The warning an adapter's ``notices`` give while the whole environment passes."""
        if self.env_policy != "inherit":
            return []
        return [
            "the agent gets this shell's whole environment, secrets included "
            "(env_policy=inherit); --setting env_policy=allowlist passes only "
            f"{', '.join(self.env_allowlist)} and the variables named in `env`"
        ]


def agent_environment(
    settings: AgentProcessSettings,
    *,
    session_id: str,
    workspace: Path,
    extra: Mapping[str, str] | None = None,
    parent: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment by ``env_policy`` (from ``parent``, default this process's), then
    ``settings.env``, then the adapter's ``extra``, then ``RAWP_SESSION_ID``,
    ``RAWP_WORKSPACE_PATH`` and ``RAWP_DPS_VERSION``, which always win."""
    parent = os.environ if parent is None else parent
    if settings.env_policy == "inherit":
        env = dict(parent)
    else:
        env = {name: parent[name] for name in settings.env_allowlist if name in parent}
    env.update(settings.env)
    env.update(extra or {})
    env[SESSION_ID_VAR] = session_id
    env["RAWP_WORKSPACE_PATH"] = str(workspace)
    env["RAWP_DPS_VERSION"] = DPS_VERSION
    return env


def check_workspace(workspace: Path) -> Path:
    """The agent's working directory; raises ``StartFailed`` unless it is an existing
    absolute directory."""
    if not workspace.is_absolute() or not workspace.is_dir():
        raise StartFailed.of(
            f"the workspace must be an existing absolute directory, not {str(workspace)!r}"
        )
    return workspace
