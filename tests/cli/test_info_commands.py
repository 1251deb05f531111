"""``rawp-adapters adapters`` and ``rawp-adapters schema``."""

from __future__ import annotations

import json
from pathlib import Path

from rawp_adapters._registry import InstalledAdapter
from rawp_adapters._schema import frame_schema, frames_markdown, render_json, schema_files
from rawp_adapters.cli._commands import format_adapters
from tests.cli.conftest import run_cli

PLUGIN = {
    "adapter_type": "scripted-cli",
    "distribution": "rawp-cli-test-plugin",
    "version": "1.2.3",
    "target": "tests.cli.agents:PluginAdapter",
    "protocol": None,
}


def test_adapters_lists_each_installed_adapter_with_its_distribution_and_version(
    tmp_path: Path, plugin_env: dict[str, str]
) -> None:
    result = run_cli("adapters", env=plugin_env, cwd=tmp_path)
    assert result.returncode == 0
    lines = result.stdout.decode().splitlines()
    assert lines[0].split() == ["ADAPTER", "PROTOCOL", "DISTRIBUTION", "VERSION", "TARGET"]
    assert [
        "scripted-cli",
        "-",
        "rawp-cli-test-plugin",
        "1.2.3",
        "tests.cli.agents:PluginAdapter",
    ] in [line.split() for line in lines[1:]]


def test_adapters_json_is_a_sorted_list_of_objects(
    tmp_path: Path, plugin_env: dict[str, str]
) -> None:
    result = run_cli("adapters", "--json", env=plugin_env, cwd=tmp_path)
    assert result.returncode == 0
    listed = json.loads(result.stdout)
    assert PLUGIN in listed
    types = [entry["adapter_type"] for entry in listed]
    assert types == sorted(types)


def test_no_installed_adapters_is_said_plainly() -> None:
    assert format_adapters([]).startswith("No adapters are installed.")
    table = format_adapters([InstalledAdapter("sdk", None, None, "pkg:Cls")])
    assert table.splitlines()[1].split() == ["sdk", "-", "-", "-", "pkg:Cls"]


def test_schema_of_one_frame_type_is_printed_as_generated(tmp_path: Path) -> None:
    result = run_cli("schema", "agent.text.delta", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout.decode() == render_json(frame_schema("agent.text.delta"))
    schema = json.loads(result.stdout)
    assert schema["properties"]["type"]["const"] == "agent.text.delta"
    assert schema["$defs"]["TextDelta"]["required"] == ["turn_id", "index", "text"]


def test_schema_without_a_type_is_the_union_of_every_frame(tmp_path: Path) -> None:
    result = run_cli("schema", cwd=tmp_path)
    assert result.returncode == 0
    union = json.loads(result.stdout)
    assert union["discriminator"]["propertyName"] == "type"
    assert "agent.interaction.request" in union["discriminator"]["mapping"]


def test_schema_export_writes_every_generated_file(tmp_path: Path) -> None:
    result = run_cli("schema", "--export", str(tmp_path / "schemas"), cwd=tmp_path)
    assert result.returncode == 0
    exported = {p.name: p.read_text(encoding="utf-8") for p in (tmp_path / "schemas").iterdir()}
    assert exported == schema_files()


def test_schema_markdown_goes_to_the_output_file(tmp_path: Path) -> None:
    target = tmp_path / "frames.md"
    result = run_cli("schema", "--markdown", "--output", str(target), cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout == b""
    assert target.read_bytes() == frames_markdown().encode()


def test_an_unknown_frame_type_exits_2_naming_the_known_ones(tmp_path: Path) -> None:
    result = run_cli("schema", "agent.telepathy", cwd=tmp_path)
    assert result.returncode == 2
    assert "unknown frame type 'agent.telepathy'" in result.stderr.decode()
    assert "agent.text.delta" in result.stderr.decode()


def test_export_with_a_frame_type_is_refused(tmp_path: Path) -> None:
    result = run_cli("schema", "agent.error", "--export", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 2
    assert list(tmp_path.iterdir()) == []
