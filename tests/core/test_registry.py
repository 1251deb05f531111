"""Adapters are found by adapter_type through entry points, like any plugin."""

from __future__ import annotations

from importlib.metadata import EntryPoint

import pytest

from rawp_adapters import (
    AdapterLoadError,
    AdapterNotFoundError,
    AgentMetadata,
    InvalidSettingsError,
    _registry,
    create_adapter,
    installed_adapters,
)
from rawp_adapters.plugins import load_adapter_class
from rawp_adapters.testing import FunctionAdapter


@pytest.fixture
def fake_entry_points(monkeypatch: pytest.MonkeyPatch) -> None:
    points = {
        "scripted": EntryPoint("scripted", "rawp_adapters.testing:FunctionAdapter", "x"),
        "broken": EntryPoint("broken", "tests.core.no_such_module:Nope", "x"),
        "notanadapter": EntryPoint("notanadapter", "rawp_adapters.testing:say", "x"),
    }
    monkeypatch.setattr(_registry, "_entry_points", lambda: points)


def test_the_built_in_adapters_are_registered_as_plugins() -> None:
    names = {a.adapter_type: a for a in installed_adapters()}
    assert {"process", "sdk"} <= set(names)
    assert names["process"].distribution == "rawp-adapter-process"
    assert names["sdk"].distribution == "rawp-adapter-sdk"
    assert names["sdk"].version


@pytest.mark.usefixtures("fake_entry_points")
def test_an_adapter_loads_by_its_type() -> None:
    assert load_adapter_class("scripted") is FunctionAdapter


@pytest.mark.usefixtures("fake_entry_points")
def test_an_unknown_type_names_the_installed_ones() -> None:
    with pytest.raises(AdapterNotFoundError, match="installed: broken, notanadapter, scripted"):
        load_adapter_class("nope")


@pytest.mark.usefixtures("fake_entry_points")
def test_an_entry_point_that_fails_to_import_is_a_load_error() -> None:
    with pytest.raises(AdapterLoadError, match="failed to load"):
        load_adapter_class("broken")


@pytest.mark.usefixtures("fake_entry_points")
def test_an_entry_point_that_is_not_an_adapter_is_a_load_error() -> None:
    with pytest.raises(AdapterLoadError, match="not an Adapter"):
        load_adapter_class("notanadapter")


def test_settings_are_validated_by_the_adapter() -> None:
    with pytest.raises(InvalidSettingsError, match="sdk"):
        create_adapter(AgentMetadata(adapter_type="sdk", settings={"no_such_setting": 1}))


def test_agent_metadata_ignores_unknown_orchestrator_fields() -> None:
    metadata = AgentMetadata.model_validate(
        {"adapter_type": "process", "single_turn_process": True, "display_name": "omp"}
    )
    assert metadata.single_turn_process
    assert metadata.settings == {}
