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
    names = {a.adapter_type: a for a in installed_adapters() if a.protocol is None}
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


@pytest.fixture
def protocol_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    points = {
        "process": EntryPoint("process", "tests.core.test_registry:PlainProcess", "x"),
        "process.echo": EntryPoint("process.echo", "tests.core.test_registry:EchoProcess", "x"),
        "process.liar": EntryPoint("process.liar", "rawp_adapters.testing:FunctionAdapter", "x"),
    }
    monkeypatch.setattr(_registry, "_entry_points", lambda: points)


class PlainProcess(FunctionAdapter):
    adapter_type = "process"


class EchoProcess(FunctionAdapter):
    """A process plugin of its own protocol, with a setting of its own."""

    adapter_type = "process"

    @classmethod
    def from_metadata(cls, metadata: AgentMetadata) -> EchoProcess:
        adapter = cls()
        adapter.given = dict(metadata.settings)
        return adapter

    given: dict[str, object]


@pytest.mark.usefixtures("protocol_plugins")
def test_a_protocol_setting_picks_the_plugin_of_that_type_and_is_not_passed_on() -> None:
    adapter = create_adapter(
        AgentMetadata(adapter_type="process", settings={"protocol": "echo", "command": ["x"]})
    )
    assert isinstance(adapter, EchoProcess)
    assert adapter.given == {"command": ["x"]}
    assert type(create_adapter(AgentMetadata(adapter_type="process"))) is PlainProcess


@pytest.mark.usefixtures("protocol_plugins")
def test_a_protocol_plugin_is_listed_under_its_adapter_type_with_its_protocol() -> None:
    listed = [(a.adapter_type, a.protocol) for a in installed_adapters()]
    assert listed == [("process", None), ("process", "echo"), ("process", "liar")]


@pytest.mark.usefixtures("protocol_plugins")
def test_an_unknown_protocol_names_the_installed_plugins() -> None:
    with pytest.raises(AdapterNotFoundError, match=r"'process.nope'.*process\.echo"):
        create_adapter(AgentMetadata(adapter_type="process", settings={"protocol": "nope"}))


@pytest.mark.usefixtures("protocol_plugins")
def test_a_protocol_that_is_not_a_name_is_invalid_settings() -> None:
    with pytest.raises(InvalidSettingsError, match="names a protocol"):
        create_adapter(AgentMetadata(adapter_type="process", settings={"protocol": ["acp"]}))


@pytest.mark.usefixtures("protocol_plugins")
def test_a_protocol_plugin_that_states_another_adapter_type_does_not_load() -> None:
    with pytest.raises(AdapterLoadError, match=r"states adapter_type 'function'.*must state"):
        create_adapter(AgentMetadata(adapter_type="process", settings={"protocol": "liar"}))
