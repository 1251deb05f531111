"""What an agent process starts with: the settings every such adapter shares, its
environment (the ``RAWP_*`` variables always win) and its working directory."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import Field

from rawp_adapters._adapter import AdapterSettings
from rawp_adapters._errors import StartFailed
from rawp_adapters._frames import DPS_VERSION
from rawp_adapters._telemetry import trace_environment

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

EnvPolicy = Literal["inherit", "allowlist"]


@dataclass(frozen=True, slots=True)
class HostEnvironment:
    """What a host lets the agents it runs take from its own environment. It applies
    to every :func:`agent_environment` of the sessions run inside
    :func:`host_environment` (a worker runs its sessions so)."""

    default_policy: EnvPolicy = "inherit"
    """The ``env_policy`` of settings that name none."""
    withheld_prefixes: tuple[str, ...] = ()
    withheld_values: frozenset[str] = frozenset()
    """Variables whose name starts with one of ``withheld_prefixes`` or whose value holds
    one of these never pass from the host, whatever the policy (the host's credentials);
    ``env`` still passes what it names."""

    def withholds(self, name: str, value: str) -> bool:
        """``name`` is a credential's, or ``value`` holds one (a URL with the password
        in it, say)."""
        return name.startswith(self.withheld_prefixes) or any(
            secret in value for secret in self.withheld_values
        )


_ANY_HOST = HostEnvironment()
"""The rules of a host that sets none (``run``, ``serve``): ``inherit``, nothing withheld."""
_HOST_ENVIRONMENT: ContextVar[HostEnvironment] = ContextVar(
    "rawp_host_environment", default=_ANY_HOST
)


@contextmanager
def host_environment(host: HostEnvironment) -> Iterator[None]:
    """Sessions started inside (in this task and the tasks it starts) build their
    agents' environments by ``host``."""
    token = _HOST_ENVIRONMENT.set(host)
    try:
        yield
    finally:
        _HOST_ENVIRONMENT.reset(token)


class AgentProcessSettings(AdapterSettings):
    """Base of the settings of an adapter that runs its agent as a child process: the
    agent's environment (see :func:`agent_environment`) and how it is stopped."""

    env_policy: EnvPolicy | None = Field(
        default=None,
        description="`inherit` passes the host's environment; `allowlist` only "
        "`env_allowlist`; unset, the host's default (`inherit`; `allowlist` on a worker).",
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
        if self.effective_env_policy() != "inherit":
            return []
        return [
            "the agent gets this shell's whole environment, secrets included "
            "(env_policy=inherit); --setting env_policy=allowlist passes only "
            f"{', '.join(self.env_allowlist)} and the variables named in `env`"
        ]

    def effective_env_policy(self) -> EnvPolicy:
        return self.env_policy or _HOST_ENVIRONMENT.get().default_policy


def agent_environment(
    settings: AgentProcessSettings,
    *,
    session_id: str,
    workspace: Path,
    extra: Mapping[str, str] | None = None,
    parent: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment by ``env_policy`` (from ``parent``, default this process's) less
    what the :class:`HostEnvironment` withholds, then ``settings.env``, then the adapter's
    ``extra``, then ``RAWP_SESSION_ID``, ``RAWP_WORKSPACE_PATH`` and
    ``RAWP_DPS_VERSION``, which always win.

    While a span is current (the session's ``create_agent`` when tracing is on), the
    agent also gets its ``TRACEPARENT`` and the host's ``OTEL_*`` settings (bar
    exporter headers, which may hold credentials), to join the trace if it traces."""
    parent = os.environ if parent is None else parent
    host = _HOST_ENVIRONMENT.get()
    names = parent if settings.effective_env_policy() == "inherit" else settings.env_allowlist
    env = {
        name: parent[name]
        for name in names
        if name in parent and not host.withholds(name, parent[name])
    }
    tracing = trace_environment()
    if tracing:
        env.update(_otel_settings(parent, host))
    env.update(settings.env)
    env.update(extra or {})
    env.update(tracing)
    env[SESSION_ID_VAR] = session_id
    env["RAWP_WORKSPACE_PATH"] = str(workspace)
    env["RAWP_DPS_VERSION"] = DPS_VERSION
    return env


def _otel_settings(parent: Mapping[str, str], host: HostEnvironment) -> dict[str, str]:
    return {
        name: value
        for name, value in parent.items()
        if name.startswith("OTEL_")
        and not name.endswith("HEADERS")
        and not host.withholds(name, value)
    }


def check_workspace(workspace: Path) -> Path:
    """The agent's working directory; raises ``StartFailed`` unless it is an existing
    absolute directory."""
    if not workspace.is_absolute() or not workspace.is_dir():
        raise StartFailed.of(
            f"the workspace must be an existing absolute directory, not {str(workspace)!r}"
        )
    return workspace
