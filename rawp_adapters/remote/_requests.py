"""What a Master puts on the start queue, and what a lease holds."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from rawp_adapters._adapter import AgentMetadata
from rawp_adapters._session import SessionOptions
from rawp_adapters.remote._names import check_session_id

OPTION_NAMES = frozenset(f.name for f in fields(SessionOptions))


class StartRequest(BaseModel):
    """One session to start: the JSON body of a message on ``<prefix>.start``."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    session_id: str
    metadata: AgentMetadata
    workspace: str | None = None
    """A directory on the worker: relative to its ``--workspace-root`` (a fresh
    ``<root>/<session_id>`` when omitted), or absolute when it has none."""
    options: dict[str, Any] = {}
    """:class:`rawp_adapters.SessionOptions` fields (e.g. ``interaction_timeout_ms``)."""

    @field_validator("session_id")
    @classmethod
    def _session_id(cls, value: str) -> str:
        return check_session_id(value)

    @field_validator("options")
    @classmethod
    def _options(cls, value: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(value) - OPTION_NAMES)
        if unknown:
            raise ValueError(f"unknown session options: {', '.join(unknown)}")
        return value

    def session_options(self) -> SessionOptions:
        return SessionOptions(**self.options)


def options_dict(options: SessionOptions | None) -> dict[str, Any]:
    """The options a Master asks for, as a start request carries them."""
    if options is None:
        return {}
    default = SessionOptions()
    return {
        f.name: getattr(options, f.name)
        for f in fields(SessionOptions)
        if getattr(options, f.name) != getattr(default, f.name)
    }
