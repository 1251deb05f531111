"""The adapter's wire models (``rawp_adapter_codex._wire``) against the JSON Schema the
installed app-server prints (``codex app-server generate-json-schema``): every field is a
property of its message, and every field the adapter requires is one codex must send."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any, get_args

import pytest
from pydantic import BaseModel
from rawp_adapter_codex import _wire

ITEM_MODELS: tuple[type[BaseModel], ...] = (
    _wire.AgentMessageItem,
    _wire.ReasoningItem,
    _wire.CommandExecutionItem,
    _wire.FileChangeItem,
    _wire.McpToolCallItem,
    _wire.WebSearchItem,
)


def item_kind(model: type[BaseModel]) -> str:
    """The ``type`` an item model reads (its ``Literal``)."""
    (kind,) = get_args(model.model_fields["type"].annotation)
    return str(kind)


@pytest.fixture(scope="module")
def definitions(codex_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every schema the binary prints, by name (its files' titles and definitions)."""
    out = tmp_path_factory.mktemp("codex-schema")
    subprocess.run(
        [str(codex_bin), "app-server", "generate-json-schema", "--out", str(out)],
        check=True,
        capture_output=True,
        timeout=60,
        env={"CODEX_HOME": str(out / "home"), "PATH": "/usr/bin:/bin"},
    )
    found: dict[str, Any] = {}
    for path in sorted(out.rglob("*.json")):
        schema = json.loads(path.read_text(encoding="utf-8"))
        found.update(schema.get("definitions", {}))
        found[path.stem] = schema
    return found


def assert_fits(model: type[BaseModel], schema: dict[str, Any], name: str) -> None:
    properties = dict(schema.get("properties", {}))
    for variant in schema.get("oneOf", []):  # fields of its variants (elicitation modes)
        properties.update(variant.get("properties", {}))
    required = set(schema.get("required", []))
    for field_name, info in model.model_fields.items():
        alias = info.alias or field_name
        assert alias in properties, f"{name} has no {alias!r} ({model.__name__}.{field_name})"
        if info.is_required():
            assert alias in required, f"{name}.{alias} is optional; the adapter requires it"


@pytest.mark.parametrize(
    ("model", "name"),
    list(_wire.SCHEMA_NAMES.items()),
    ids=lambda v: getattr(v, "__name__", str(v)),
)
def test_each_message_model_fits_the_schema_of_the_installed_app_server(
    model: type[BaseModel], name: str, definitions: dict[str, Any]
) -> None:
    assert name in definitions, f"the app-server's schema defines no {name}"
    assert_fits(model, definitions[name], name)


def test_each_thread_item_model_fits_its_variant_of_thread_item(
    definitions: dict[str, Any],
) -> None:
    variants = {
        variant["properties"]["type"]["enum"][0]: variant
        for variant in definitions["ThreadItem"]["oneOf"]
    }
    for model in ITEM_MODELS:
        kind = item_kind(model)
        assert kind in variants, f"ThreadItem has no {kind!r} variant"
        assert_fits(model, variants[kind], f"ThreadItem {kind}")
