"""Command lines and environment of the process adapter's agent (sans-IO)."""

from __future__ import annotations

from pathlib import Path

import pytest
from rawp_adapter_process import EXTENSION_PATH, ProcessSettings
from rawp_adapter_process._launch import agent_env, rpc_argv, single_turn_argv

PARENT = {"PATH": "/bin", "HOME": "/home/u", "SECRET_KEY": "s", "RAWP_WORKSPACE_PATH": "/x"}


def env_of(dialog_timeout_ms: int | None = None, **settings: object) -> dict[str, str]:
    return agent_env(
        ProcessSettings.model_validate(settings),
        session_id="sid",
        workspace=Path("/srv/workspace"),
        dialog_timeout_ms=dialog_timeout_ms,
        parent=PARENT,
    )


def test_the_parents_environment_is_inherited_by_default_and_rawp_variables_win() -> None:
    env = env_of(env={"EXTRA": "1", "RAWP_SESSION_ID": "spoofed"})
    assert env["SECRET_KEY"] == "s"
    assert env["EXTRA"] == "1"
    assert env["RAWP_SESSION_ID"] == "sid"
    assert env["RAWP_WORKSPACE_PATH"] == "/srv/workspace"
    assert env["RAWP_DPS_VERSION"] == "rawp-dps-1.0"


def test_the_allowlist_policy_keeps_only_the_listed_variables() -> None:
    env = env_of(env_policy="allowlist", env_allowlist=["PATH", "MISSING"], approval="none")
    assert env == {
        "PATH": "/bin",
        "RAWP_SESSION_ID": "sid",
        "RAWP_WORKSPACE_PATH": "/srv/workspace",
        "RAWP_DPS_VERSION": "rawp-dps-1.0",
    }


def test_the_extension_learns_which_tools_to_gate_and_its_deadline() -> None:
    env = env_of(permission_tools=["bash", "write"], dialog_timeout_ms=1000)
    assert env["RAWP_PERMISSION_TOOLS"] == "bash,write"
    assert env["RAWP_PERMISSION_TIMEOUT_MS"] == "6000"


@pytest.mark.parametrize(
    ("given", "tools"),
    [
        ("*", ["*"]),
        ("bash, Edit,,write ", ["bash", "Edit", "write"]),
        ("", []),
        (["*"], ["*"]),
    ],
)
def test_permission_tools_accept_a_star_or_a_comma_separated_string(
    given: object, tools: list[str]
) -> None:
    settings = ProcessSettings.model_validate({"permission_tools": given})
    assert settings.permission_tools == tools


def test_a_master_gates_every_tool_with_a_star() -> None:
    assert env_of(permission_tools="*")["RAWP_PERMISSION_TOOLS"] == "*"
    argv = rpc_argv(ProcessSettings.model_validate({"command": ["omp"], "permission_tools": "*"}))
    assert argv == ["omp", "-e", str(EXTENSION_PATH)]


def test_the_default_gated_tools_are_those_that_change_state() -> None:
    tools = ProcessSettings().permission_tools
    assert {"bash", "edit", "write", "eval", "ast_edit"} <= set(tools)
    assert not {"read", "grep", "glob", "find", "ls"} & set(tools)


def test_the_default_command_is_xcsh_in_rpc_mode_with_the_permission_extension() -> None:
    argv = rpc_argv(ProcessSettings(model="anthropic/claude", extra_args=["--no-session"]))
    assert argv == [
        "xcsh", "--mode", "rpc", "--model", "anthropic/claude",
        "-e", str(EXTENSION_PATH), "--no-session",
    ]  # fmt: skip
    assert EXTENSION_PATH.is_file()


@pytest.mark.parametrize(
    ("settings", "approval_args"),
    [
        ({"approval": "omp-builtin"}, ["--approval-mode", "always-ask"]),
        ({"approval": "omp-builtin", "permission_tools": ["*"]}, ["--approval-mode", "always-ask"]),
        ({"approval": "none"}, []),
        ({"permission_tools": []}, []),
    ],
    ids=["omp-listed", "omp-all", "none", "no-tools"],
)
def test_the_approval_source_decides_the_approval_arguments(
    settings: dict[str, object], approval_args: list[str]
) -> None:
    argv = rpc_argv(ProcessSettings.model_validate({"command": ["omp"], **settings}))
    assert argv == ["omp", *approval_args]


def test_a_single_turn_command_resumes_the_agents_session_after_the_first_prompt() -> None:
    settings = ProcessSettings.model_validate(
        {"provider": "p", "single_turn": {"command": ["pi", "--mode", "json"]}}
    )
    assert single_turn_argv(settings, prompt="hi {x}", resume=None) == [
        "pi", "--mode", "json", "--provider", "p", "hi {x}",
    ]  # fmt: skip
    assert single_turn_argv(settings, prompt="again", resume="s-1") == [
        "pi", "--mode", "json", "--provider", "p", "--session", "s-1", "again",
    ]  # fmt: skip
