"""What a Master sees before any turn: a missing SDK or CLI named in one line, options
checked, and a CLI that runs logged in to nothing, offline."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import structlog
from rawp_adapter_sdk import CoreEnvironment, CoreError, create_core
from rawp_core_copilot import INSTALL_HINT, CopilotCore
from rawp_core_copilot._runtime import LOGIN_VARIABLES, Settings, cli_environment

from rawp_adapters import InvalidSettingsError
from tests.copilot.sessions import sdk_threads

pytestmark = pytest.mark.anyio

SDK_MODULES = ("copilot", "rawp_core_copilot._runtime", "rawp_core_copilot._turn")
OPTIONS = {"model": "fake-model", "base_url": "http://127.0.0.1:9/v1"}


def environment(workspace: Path) -> CoreEnvironment:
    return CoreEnvironment(workspace=workspace, session_id="s", log=structlog.stdlib.get_logger())


async def test_without_the_sdk_the_core_fails_to_start_with_one_line_naming_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for module in SDK_MODULES:
        monkeypatch.setitem(sys.modules, module, None)  # import fails as if not installed
    core = create_core("copilot", OPTIONS)
    with pytest.raises(CoreError) as failed:
        await core.start(environment(tmp_path))
    assert failed.value.fatal is True
    assert str(failed.value) == INSTALL_HINT
    assert "\n" not in INSTALL_HINT
    assert "pip install rawp-core-copilot" in INSTALL_HINT


async def test_without_the_cli_the_core_fails_to_start_naming_where_it_looks(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("COPILOT_CLI_PATH", raising=False)
    with pytest.raises(CoreError, match="COPILOT_CLI_PATH") as failed:
        await create_core("copilot", OPTIONS).start(environment(tmp_path))
    assert failed.value.fatal is True
    missing = str(tmp_path / "copilot")
    with pytest.raises(CoreError, match="is not an executable file"):
        await create_core("copilot", OPTIONS | {"cli_path": missing}).start(environment(tmp_path))


async def test_a_cli_that_does_not_tell_its_version_fails_the_start_and_starts_no_thread(
    tmp_path: Path,
) -> None:
    before = sdk_threads()
    core = create_core("copilot", OPTIONS | {"cli_path": "/bin/false"})
    with pytest.raises(CoreError, match="did not tell its version"):
        await core.start(environment(tmp_path))
    assert sdk_threads() == before


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"model": ""},
        {"model": "m"},  # no provider: the core never falls back to a GitHub login
        OPTIONS | {"tools": ["bash"]},
        OPTIONS | {"provider_type": "github"},
        OPTIONS | {"wire_api": "chat"},
    ],
)
def test_bad_options_are_refused_before_anything_starts(
    options: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COPILOT_PROVIDER_BASE_URL", raising=False)
    with pytest.raises(InvalidSettingsError):
        create_core("copilot", options)


def test_the_core_is_registered_as_a_plugin_under_its_name() -> None:
    assert isinstance(create_core("copilot", OPTIONS), CopilotCore)


def test_the_cli_runs_offline_on_the_provider_and_never_gets_a_github_token(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in LOGIN_VARIABLES:
        monkeypatch.setenv(name, "a-token")
    settings = Settings(
        model="fake-model",
        base_url="http://127.0.0.1:9/v1",
        api_key="key",
        provider_type="openai",
        wire_api="completions",
        tools=["write"],
        cli=tmp_path / "copilot",
        home=tmp_path,
        workspace=tmp_path,
    )
    env = cli_environment(settings)
    assert not set(LOGIN_VARIABLES) & set(env)
    assert env["COPILOT_OFFLINE"] == "true"
    assert env["COPILOT_PROVIDER_BASE_URL"] == "http://127.0.0.1:9/v1"
    assert env["COPILOT_MODEL"] == "fake-model"
