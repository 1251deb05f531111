"""The JSON Schemas and the field reference in specs/ are generated from the frame
models and must not drift from them."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, get_args

import pytest

from rawp_adapters._codec import FRAME_CLASS_BY_TYPE
from rawp_adapters._frames import Source
from rawp_adapters._schema import (
    UNION_FILE,
    export_schemas,
    frame_schema,
    frame_types,
    frames_markdown,
    render_json,
)
from tests.core.samples import SAMPLE_PAYLOADS, sample_frame

SPECS = Path(__file__).resolve().parents[2] / "specs"
REGENERATE_SCHEMAS = "rawp-adapters schema --export specs/schemas"
REGENERATE_MARKDOWN = "rawp-adapters schema --markdown --output specs/dps-frames.md"
SOURCES = set(get_args(Source))


def test_committed_schemas_match_the_models_byte_for_byte(tmp_path: Path) -> None:
    export_schemas(tmp_path)
    fresh = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    committed = {p.name: p.read_bytes() for p in (SPECS / "schemas").glob("*.schema.json")}
    drifted = sorted(
        name for name in fresh.keys() | committed.keys() if fresh.get(name) != committed.get(name)
    )
    assert not drifted, (
        f"specs/schemas/ is out of date with the frame models ({', '.join(drifted)}); "
        f"regenerate with: {REGENERATE_SCHEMAS}"
    )


def test_committed_field_reference_matches_the_models() -> None:
    committed = (SPECS / "dps-frames.md").read_bytes()
    assert committed == frames_markdown().encode(), (
        f"specs/dps-frames.md is out of date with the frame models; "
        f"regenerate with: {REGENERATE_MARKDOWN}"
    )


def test_export_writes_one_file_per_frame_type_and_the_union(tmp_path: Path) -> None:
    written = export_schemas(tmp_path)
    names = {p.name for p in written}
    assert names == {UNION_FILE} | {f"{t}.schema.json" for t in FRAME_CLASS_BY_TYPE}
    for path in written:
        text = path.read_text(encoding="utf-8")
        assert text.endswith("}\n")
        assert text == render_json(json.loads(text)), f"{path.name} is not in canonical form"


def test_export_removes_schema_files_of_frame_types_that_no_longer_exist(tmp_path: Path) -> None:
    stale = tmp_path / "agent.renamed.schema.json"
    stale.write_text("{}\n")
    unrelated = tmp_path / "README.md"
    unrelated.write_text("kept\n")
    export_schemas(tmp_path)
    assert not stale.exists()
    assert unrelated.read_text() == "kept\n"


def _properties(schema: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (f"{name}.{field}", spec)
        for name, definition in schema["$defs"].items()
        for field, spec in definition.get("properties", {}).items()
    ]


def test_every_field_of_every_model_has_a_source_and_a_description() -> None:
    undocumented = [
        where
        for where, spec in _properties(frame_schema())
        if not spec.get("description") or spec.get("x-source") not in SOURCES
    ]
    assert not undocumented


def test_every_frame_states_its_source_and_direction_and_requires_its_type() -> None:
    union = frame_schema()
    frames = [union["$defs"][ref["$ref"].rsplit("/", 1)[-1]] for ref in union["oneOf"]]
    assert len(frames) == len(FRAME_CLASS_BY_TYPE)
    for frame in frames:
        assert frame["x-source"] in SOURCES
        assert frame["x-direction"] in {"Client→Master", "Master→Client"}
        assert "type" in frame["required"]


def test_one_frame_schema_is_the_same_frame_as_in_the_union() -> None:
    union = frame_schema()
    for frame_type in frame_types():
        single = frame_schema(frame_type)
        name = single["title"]
        assert single["properties"] == union["$defs"][name]["properties"], frame_type


def test_an_unknown_frame_type_has_no_schema() -> None:
    with pytest.raises(KeyError):
        frame_schema("agent.telepathy")


def test_the_field_reference_lists_every_frame_and_every_payload_field() -> None:
    markdown = frames_markdown()
    for frame_type in frame_types():
        assert f"\n### `{frame_type}`\n" in markdown
        for field in SAMPLE_PAYLOADS[frame_type]:
            assert f"| `{field}` |" in markdown, (frame_type, field)


# ------------------------------------------------------------ against real frames


@pytest.fixture
def validator() -> Any:
    """A JSON Schema 2020-12 validator class (the jsonschema package is optional)."""
    return pytest.importorskip("jsonschema").Draft202012Validator


@pytest.mark.parametrize("frame_type", sorted(SAMPLE_PAYLOADS))
def test_a_valid_frame_of_each_type_passes_its_schema_and_the_union(
    frame_type: str, validator: Any
) -> None:
    frame = sample_frame(frame_type)
    validator(frame_schema(frame_type)).validate(frame)
    validator(frame_schema()).validate(frame)


@pytest.mark.parametrize(
    ("frame_type", "breakage"),
    [
        ("agent.text.delta", lambda f: f.pop("type")),
        ("agent.text.delta", lambda f: f["payload"].pop("turn_id")),
        ("session.turn.end", lambda f: f["payload"].update(stop_reason="finished")),
        ("session.error", lambda f: f["payload"].update(fatal="no")),
        ("control.prompt.request", lambda f: f.update(seq=0)),
        ("tool.invoke.request", lambda f: f["payload"].update(input=["not", "an", "object"])),
    ],
)
def test_a_broken_frame_fails_the_union_schema(
    frame_type: str, breakage: Any, validator: Any
) -> None:
    frame = copy.deepcopy(sample_frame(frame_type))
    breakage(frame)
    assert not validator(frame_schema()).is_valid(frame)
