"""What the start form is built from: each installed adapter with the JSON Schema of
its settings model, and the request it sends back as an adapter and a workspace."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rawp_adapters._adapter import Adapter, AgentMetadata
from rawp_adapters._errors import RawpError
from rawp_adapters._registry import (
    PROTOCOL_SETTING,
    create_adapter,
    installed_adapters,
    load_adapter_class,
)
from rawp_adapters._session import SessionOptions


def adapter_forms() -> list[dict[str, Any]]:
    """Every installed adapter with its settings' schema (``None`` when its class does
    not load: the form then takes settings as JSON)."""
    forms = []
    for installed in installed_adapters():
        schema: dict[str, Any] | None
        try:
            cls = load_adapter_class(installed.adapter_type, installed.protocol)
            schema = cls.settings_model.model_json_schema()
        except RawpError:
            schema = None
        forms.append(
            {
                "adapter_type": installed.adapter_type,
                "protocol": installed.protocol,
                "distribution": installed.distribution,
                "schema": schema,
            }
        )
    return forms


@dataclass(frozen=True, slots=True)
class StartRequest:
    adapter: Adapter
    workspace: Path
    options: SessionOptions
    title: str


def start_request(body: object) -> StartRequest:
    """The adapter and workspace the form asks for; ``ValueError`` (or a
    :class:`RawpError`) with a message for the page when they are not right."""
    if not isinstance(body, dict):
        raise ValueError("the request must be a JSON object")
    adapter_type = body.get("adapter_type")
    if not isinstance(adapter_type, str) or not adapter_type:
        raise ValueError("adapter_type is required")
    settings = body.get("settings") or {}
    if not isinstance(settings, dict):
        raise ValueError("settings must be a JSON object")
    protocol = body.get("protocol")
    if protocol:
        settings = {**settings, PROTOCOL_SETTING: protocol}
    workspace = Path(str(body.get("workspace") or ""))
    if not workspace.is_absolute() or not workspace.is_dir():
        raise ValueError(f"workspace must be an existing absolute directory: {workspace}")
    options = SessionOptions()
    deadline = body.get("interaction_timeout_ms")
    if deadline not in (None, ""):
        if not isinstance(deadline, int) or deadline < 1:
            raise ValueError("interaction_timeout_ms must be a whole number of at least 1")
        options = SessionOptions(interaction_timeout_ms=deadline)
    adapter = create_adapter(AgentMetadata(adapter_type=adapter_type, settings=settings))
    name = adapter_type if not protocol else f"{adapter_type}.{protocol}"
    core = settings.get("core")
    title = f"{name} ({core})" if isinstance(core, str) else name
    return StartRequest(adapter, workspace, options, title)
