"""JSON Schemas and the field reference of every DPS frame, generated from the models.

The output is deterministic (sorted keys, two-space indent, UTF-8, one trailing
newline) so the files committed under ``specs/`` can be compared byte for byte
with what the models produce now.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

from pydantic import TypeAdapter
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue

from rawp_adapters._codec import CLIENT_FRAME_TYPES, FRAME_CLASS_BY_TYPE
from rawp_adapters._frames import AgentErrorCode, Frame, SessionErrorCode

SCHEMA_DIALECT: Final = "https://json-schema.org/draft/2020-12/schema"
UNION_FILE: Final = "frame.schema.json"
SCHEMA_SUFFIX: Final = ".schema.json"

_TYPE_DESCRIPTION: Final = "The frame type; it decides what the payload holds."
_PAYLOAD_DESCRIPTION: Final = "The frame's content."


class _FieldDocs(GenerateJsonSchema):
    """Every field documents itself: its ``description``/``x-source`` stay beside a
    ``$ref`` even when the referenced model carries the same values, and no field
    gets a title made up from its name."""

    def handle_ref_overrides(self, json_schema: JsonSchemaValue) -> JsonSchemaValue:
        return json_schema

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def frame_types() -> list[str]:
    """Every known frame ``type``, sorted."""
    return sorted(FRAME_CLASS_BY_TYPE)


def frame_schema(frame_type: str | None = None) -> dict[str, Any]:
    """The JSON Schema of one frame type, or of any frame (the union on ``type``).

    Raises ``KeyError`` for an unknown frame type.
    """
    if frame_type is None:
        schema = TypeAdapter(Frame).json_schema(schema_generator=_FieldDocs)
        for definition in schema["$defs"].values():
            if "x-direction" in definition:
                _document_envelope_fields(definition)
        return {
            "$schema": SCHEMA_DIALECT,
            "title": "RAWP-DPS frame",
            "description": "Any RAWP-DPS frame; `type` selects the frame model.",
            **schema,
        }
    cls = FRAME_CLASS_BY_TYPE[frame_type]
    schema = cls.model_json_schema(schema_generator=_FieldDocs)
    _document_envelope_fields(schema)
    return {"$schema": SCHEMA_DIALECT, **schema}


def _document_envelope_fields(frame: dict[str, Any]) -> None:
    """``type`` and ``payload`` are declared per frame class without docs; a reader
    always needs ``type`` (the codec dispatches on it), so it is required here."""
    properties = frame["properties"]
    properties["type"].update({"description": _TYPE_DESCRIPTION, "x-source": "1.0.0"})
    properties["payload"].update({"description": _PAYLOAD_DESCRIPTION, "x-source": "1.0.0"})
    frame["required"] = ["type", *frame["required"]]


def render_json(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def schema_files() -> dict[str, str]:
    """File name → content: one ``<type>.schema.json`` per frame type and the union."""
    files = {UNION_FILE: render_json(frame_schema())}
    for frame_type in frame_types():
        files[frame_type + SCHEMA_SUFFIX] = render_json(frame_schema(frame_type))
    return files


def export_schemas(directory: Path) -> list[Path]:
    """Write :func:`schema_files` into ``directory`` and remove schema files of frame
    types that no longer exist. Returns the written paths, sorted."""
    directory.mkdir(parents=True, exist_ok=True)
    files = schema_files()
    for stale in directory.glob("*" + SCHEMA_SUFFIX):
        if stale.name not in files:
            stale.unlink()
    written = []
    for name, content in sorted(files.items()):
        path = directory / name
        path.write_bytes(content.encode())
        written.append(path)
    return written


# ------------------------------------------------------------------ markdown

_MARKDOWN_HEADER: Final = """\
<!-- Generated from rawp_adapters/_frames.py; do not edit.
     Regenerate: rawp-adapters schema --markdown --output specs/dps-frames.md -->

# RAWP-DPS frames: every field

Generated from the frame models, so every frame and every field is listed.
The rules, the envelope and the error codes are explained in
[dps-contract.md](dps-contract.md); the JSON Schemas are in [schemas/](schemas/).

Source of each name: **§17** RAWP-DPS 1.0.1 section 17 (normative) ·
**1.0.0** read in RAWP-DPS 1.0.0 · **TOC** named in the 1.0.1 table of contents ·
**CRS** RAWP-CRS 1.0.1 · **ours** our decision where the spec text is not available.
"""

_TABLE_HEAD: Final = (
    "| field | required | type | default | source | description |\n|---|---|---|---|---|---|\n"
)


def frames_markdown() -> str:
    """The field reference of every frame and nested object, as Markdown."""
    schema = frame_schema()
    defs: dict[str, Any] = schema["$defs"]
    frames = [_ref_name(entry["$ref"]) for entry in schema["oneOf"]]
    payloads = {_ref_name(defs[name]["properties"]["payload"]["$ref"]) for name in frames}
    nested = sorted(set(defs) - set(frames) - payloads)
    parts = [_MARKDOWN_HEADER, "\n## Envelope\n\nEvery frame has these fields.\n\n"]
    parts.append(_field_table(_envelope(defs[frames[0]])))
    for title, client in (("Client → Master", True), ("Master → Client", False)):
        chosen = [name for name in frames if _is_client(defs[name]) == client]
        parts.append(f"\n## {title}\n\n| type | payload | source |\n|---|---|---|\n")
        for name in chosen:
            frame_type = defs[name]["properties"]["type"]["const"]
            payload = _ref_name(defs[name]["properties"]["payload"]["$ref"])
            parts.append(
                f"| [`{frame_type}`](#{_anchor(frame_type)}) | `{payload}` "
                f"| {defs[name]['x-source']} |\n"
            )
        for name in chosen:
            parts.append(_frame_section(defs, name))
    parts.append("\n## Nested objects\n")
    for name in nested:
        parts.append(_object_section(name, defs[name]))
    parts.append(_codes_section())
    return "".join(parts)


def _codes_section() -> str:
    lines = ["\n## Codes\n"]
    for codes in (SessionErrorCode, AgentErrorCode):
        lines.append(f"\n### `{codes.__name__}`\n\n{_one_line(codes.__doc__ or '')}\n\n")
        lines.extend(f"- `{code.value}`\n" for code in codes)
    return "".join(lines)


def _is_client(frame: dict[str, Any]) -> bool:
    return frame["properties"]["type"]["const"] in CLIENT_FRAME_TYPES


def _frame_section(defs: dict[str, Any], name: str) -> str:
    frame = defs[name]
    frame_type = frame["properties"]["type"]["const"]
    payload_name = _ref_name(frame["properties"]["payload"]["$ref"])
    payload = defs[payload_name]
    lines = [
        f"\n### `{frame_type}`\n\n",
        f"Source: {frame['x-source']} · {frame['x-direction']} · payload `{payload_name}`\n\n",
    ]
    if "description" in payload:
        lines.append(_one_line(payload["description"]) + "\n\n")
    lines.append(_field_table(payload))
    return "".join(lines)


def _object_section(name: str, definition: dict[str, Any]) -> str:
    extra = " · keys not listed are kept" if definition.get("additionalProperties") else ""
    lines = [f"\n### `{name}`\n\nSource: {definition.get('x-source', 'ours')}{extra}\n\n"]
    if "description" in definition:
        lines.append(_one_line(definition["description"]) + "\n\n")
    lines.append(_field_table(definition))
    return "".join(lines)


def _envelope(frame: dict[str, Any]) -> dict[str, Any]:
    """A frame's definition with ``type`` and ``payload`` made generic."""
    properties = dict(frame["properties"])
    properties["type"] = {"type": "string", "description": _TYPE_DESCRIPTION, "x-source": "1.0.0"}
    properties["payload"] = {
        "type": "object",
        "description": _PAYLOAD_DESCRIPTION + " See each frame below.",
        "x-source": "1.0.0",
    }
    return {**frame, "properties": properties}


def _field_table(definition: dict[str, Any]) -> str:
    required = set(definition.get("required", ()))
    rows = [_TABLE_HEAD]
    for field, spec in definition["properties"].items():
        default = f"`{json.dumps(spec['default'])}`" if "default" in spec else ""
        rows.append(
            f"| `{field}` | {'**yes**' if field in required else 'no'} | {_type_text(spec)} "
            f"| {_cell(default)} | {spec.get('x-source', '')} "
            f"| {_cell(_one_line(spec.get('description', '')))} |\n"
        )
    return "".join(rows)


def _type_text(spec: dict[str, Any]) -> str:
    if "$ref" in spec:
        name = _ref_name(spec["$ref"])
        return f"[`{name}`](#{_anchor(name)})"
    if "anyOf" in spec:
        return " or ".join(_type_text(option) for option in spec["anyOf"])
    if "const" in spec:
        return f"`{json.dumps(spec['const'])}`"
    if "enum" in spec:
        return "one of " + ", ".join(f"`{value}`" for value in spec["enum"])
    kind = spec.get("type")
    if kind == "array":
        return "array of " + _type_text(spec.get("items", {}))
    if kind is None:
        return "any JSON value"
    if "minimum" in spec:
        return f"{kind} ≥ {spec['minimum']}"
    return str(kind)


def _ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def _anchor(heading: str) -> str:
    """The GitHub anchor of a heading made of one code span."""
    return "".join(ch for ch in heading.lower() if ch.isalnum() or ch in "-_")


def _one_line(text: str) -> str:
    """Docstrings use reStructuredText literals; Markdown wants single backticks."""
    return " ".join(text.replace("``", "`").split())


def _cell(text: str) -> str:
    return text.replace("|", "\\|")
