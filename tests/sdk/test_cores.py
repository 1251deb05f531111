"""Finding cores by name and import path, and what the adapter reports about them."""

from __future__ import annotations

from pathlib import Path

import pytest
from rawp_adapter_sdk import (
    CORE_ENTRY_POINT_GROUP,
    DEFAULT_CORE,
    AgentCore,
    CompactingCore,
    CoreFeatures,
    FunctionCore,
    ModeSwitchingCore,
    SdkAdapter,
    create_core,
    installed_cores,
)
from rawp_adapter_sdk.cores.claude import ClaudeCore
from rawp_adapter_sdk.cores.demo import DemoCore
from rawp_adapter_sdk.testing import say

from rawp_adapters import AgentMetadata, InvalidSettingsError, create_adapter
from rawp_adapters.frames import SessionCapabilitiesFrame, SessionErrorFrame
from rawp_adapters.testing import drive


def hello_core(*, greeting: str = "Hello") -> FunctionCore:
    """A factory as a third party would register one (named by import path in tests)."""
    return FunctionCore(
        say(greeting), name="scripted", version="0", features=CoreFeatures(thinking=True)
    )


def test_the_built_in_cores_implement_the_core_contract() -> None:
    cores: list[AgentCore] = [DemoCore(), ClaudeCore()]  # checked statically by mypy too
    assert all(isinstance(core, AgentCore) for core in cores)


def test_the_claude_core_can_compact_and_plan_and_the_demo_core_can_do_neither() -> None:
    claude, demo = ClaudeCore(), DemoCore()
    assert isinstance(claude, CompactingCore)
    assert isinstance(claude, ModeSwitchingCore)
    assert not isinstance(demo, CompactingCore)
    assert not isinstance(demo, ModeSwitchingCore)


def test_the_built_in_cores_are_registered_in_their_own_entry_point_group() -> None:
    cores = {core.name: core for core in installed_cores()}
    assert CORE_ENTRY_POINT_GROUP == "rawp_adapters.sdk_cores"
    assert cores["demo"].target == "rawp_adapter_sdk.cores.demo:DemoCore"
    assert cores["claude"].target == "rawp_adapter_sdk.cores.claude:ClaudeCore"
    assert cores["demo"].distribution == "rawp-adapter-sdk"


def test_the_sdk_adapter_runs_the_demo_core_unless_told_otherwise() -> None:
    adapter = create_adapter(AgentMetadata(adapter_type="sdk"))
    assert isinstance(adapter, SdkAdapter)
    assert DEFAULT_CORE == "demo"
    assert isinstance(adapter.core, DemoCore)


def test_a_core_can_be_named_by_import_path_with_its_options() -> None:
    core = create_core("tests.sdk.test_cores:hello_core", {"greeting": "Hi"})
    assert isinstance(core, FunctionCore)
    demo = create_core("rawp_adapter_sdk.cores.demo:DemoCore", {"delay_ms": 0})
    assert isinstance(demo, DemoCore)
    assert demo.delay == 0


def installed_names() -> str:
    """The installed cores as the errors list them (more with each core plugin)."""
    names = [core.name for core in installed_cores()]
    assert {"claude", "demo"} <= set(names)
    return ", ".join(names)


def test_an_unknown_core_name_is_an_error_that_lists_the_installed_ones() -> None:
    with pytest.raises(InvalidSettingsError) as caught:
        create_core("nope")
    assert "no SDK agent core 'nope'" in str(caught.value)
    assert f"installed: {installed_names()})" in str(caught.value)


@pytest.mark.parametrize(
    ("core", "options", "match"),
    [
        ("no_such_module_xyz:Core", {}, "failed to load"),
        ("rawp_adapter_sdk.cores.demo:Missing", {}, "failed to load"),
        ("rawp_adapter_sdk.cores.demo:DEFAULT_FILE_NAME", {}, "not callable"),
        ("demo", {"colour": "blue"}, "invalid options"),
        ("demo", {"file_name": "../outside.txt"}, "invalid options"),
        ("demo", {"delay_ms": -1}, "invalid options"),
        ("builtins:dict", {}, "did not build an AgentCore"),
    ],
)
def test_a_core_that_cannot_be_built_is_an_invalid_settings_error(
    core: str, options: dict[str, object], match: str
) -> None:
    with pytest.raises(InvalidSettingsError, match=match):
        SdkAdapter.from_settings({"core": core, "core_options": options})


@pytest.mark.parametrize(
    "settings",
    [{"permission_timeout_ms": 0}, {"core_options": "x"}, {"unknown_setting": 1}],
)
def test_bad_adapter_settings_are_rejected(settings: dict[str, object]) -> None:
    with pytest.raises(InvalidSettingsError):
        SdkAdapter.from_settings(settings)


def test_the_sdk_adapter_does_not_take_single_turn_process() -> None:
    with pytest.raises(InvalidSettingsError, match="single_turn_process"):
        SdkAdapter.from_metadata(AgentMetadata(adapter_type="sdk", single_turn_process=True))


@pytest.mark.anyio
async def test_capabilities_report_sdk_and_only_what_the_core_can_do(tmp_path: Path) -> None:
    adapter = SdkAdapter.from_settings({"core": "tests.sdk.test_cores:hello_core"})
    async with drive(adapter, workspace=tmp_path) as d:
        caps = await d.wait_for(SessionCapabilitiesFrame)
        assert caps.payload.adapter_type == "sdk"
        features = caps.payload.features
        assert features.adapter_type == "sdk"
        assert features.thinking
        for unsupported in (
            "tool_events",
            "permission_requests",
            "abort",
            "context_compaction",
            "plan_mode",
            "images",
            "single_turn_process",
        ):
            assert getattr(features, unsupported) is False, unsupported
        assert caps.payload.agent is not None
        assert (caps.payload.agent.name, caps.payload.agent.version) == ("scripted", "0")
        await d.send(d.control.compact())
        error = await d.wait_for(SessionErrorFrame)
        assert error.payload.error_code == "UNSUPPORTED"
        turn = await d.prompt("hi")
        assert turn.text == "Hello"


@pytest.mark.parametrize(
    "core",
    # The second is not importable: refused before anything is imported.
    ["tests.sdk.test_cores:hello_core", "no_such_module_xyz:Core"],
)
def test_a_host_that_forbids_import_paths_refuses_a_core_named_by_import_path(
    core: str,
) -> None:
    metadata = AgentMetadata(adapter_type="sdk", settings={"core": core}, allow_import_paths=False)
    with pytest.raises(InvalidSettingsError) as caught:
        create_adapter(metadata)
    message = str(caught.value)
    assert f"{core!r}" in message
    assert f"installed cores: {installed_names()})" in message
    assert "--allow-import-path" in message
    assert "allow_import_paths=True" in message


@pytest.mark.parametrize("allow_import_paths", [True, False])
def test_a_host_that_forbids_import_paths_still_runs_installed_cores(
    allow_import_paths: bool,
) -> None:
    adapter = create_adapter(
        AgentMetadata(
            adapter_type="sdk",
            settings={"core": "demo", "core_options": {"delay_ms": 0}},
            allow_import_paths=allow_import_paths,
        )
    )
    assert isinstance(adapter, SdkAdapter)
    assert isinstance(adapter.core, DemoCore)


def test_a_host_that_allows_import_paths_loads_a_core_named_by_import_path() -> None:
    adapter = create_adapter(
        AgentMetadata(
            adapter_type="sdk",
            settings={"core": "tests.sdk.test_cores:hello_core"},
            allow_import_paths=True,
        )
    )
    assert isinstance(adapter, SdkAdapter)
    assert isinstance(adapter.core, FunctionCore)
