"""How the agent is launched: command lines, environment, working directory."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from rawp_adapter_process._settings import (
    PROMPT_PLACEHOLDER,
    SESSION_ID_PLACEHOLDER,
    ProcessSettings,
)
from rawp_adapters import StartFailed
from rawp_adapters.processes import agent_environment

EXTENSION_PATH = Path(__file__).resolve().parent / "extension" / "permission_gate.ts"
"""The bundled permission extension, loaded with ``-e``."""

_EXTENSION_TIMEOUT_MARGIN_MS = 5_000
"""The extension's own deadline is later than the adapter's, which answers first."""


def check_executable(argv0: str, env: Mapping[str, str]) -> None:
    """Raise ``StartFailed`` when the command's program cannot be found on the agent's PATH."""
    if shutil.which(argv0, path=env.get("PATH", os.defpath)) is None:
        raise StartFailed.of(f"cannot start the agent: {argv0!r} is not an executable program")


def agent_name(settings: ProcessSettings) -> str:
    return settings.agent_name or Path(settings.command[0]).name


def _model_args(settings: ProcessSettings) -> list[str]:
    args: list[str] = []
    if settings.provider:
        args += ["--provider", settings.provider]
    if settings.model:
        args += ["--model", settings.model]
    return args


def permission_gated(settings: ProcessSettings) -> bool:
    return settings.approval != "none" and bool(settings.permission_tools)


def rpc_argv(settings: ProcessSettings, mcp_dir: Path | None = None) -> list[str]:
    """``command + model args + approval args + extra_args``, then ``-e mcp_dir`` (the
    session's MCP servers for omp, :mod:`rawp_adapter_process._mcp`)."""
    approval: list[str] = []
    if permission_gated(settings):
        if settings.approval == "extension":
            approval = ["-e", str(EXTENSION_PATH)]
        else:
            # omp's "write" mode lets write-tier tools (write, edit) run unasked: ask for
            # both tiers; the tools of them that permission_tools leaves out pass unasked.
            approval = ["--approval-mode", "always-ask"]
    mcp = ["-e", str(mcp_dir)] if mcp_dir is not None else []
    return [*settings.command, *_model_args(settings), *approval, *settings.extra_args, *mcp]


def single_turn_argv(settings: ProcessSettings, *, prompt: str, resume: str | None) -> list[str]:
    """``single_turn.command + model args + extra_args + resume args + prompt args``."""
    single = settings.single_turn
    resume_args = (
        [arg.replace(SESSION_ID_PLACEHOLDER, resume) for arg in single.resume_args]
        if resume is not None
        else []
    )
    prompt_args = [prompt if arg == PROMPT_PLACEHOLDER else arg for arg in single.prompt_args]
    return [
        *single.command,
        *_model_args(settings),
        *settings.extra_args,
        *resume_args,
        *prompt_args,
    ]


def agent_env(
    settings: ProcessSettings,
    *,
    session_id: str,
    workspace: Path,
    dialog_timeout_ms: int | None = None,
    parent: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """:func:`~rawp_adapters.processes.agent_environment` with what the permission
    extension needs to know: the tools it gates and, given the adapter's deadline of a
    dialog (``dialog_timeout_ms``), its own."""
    extra: dict[str, str] = {}
    if permission_gated(settings) and settings.approval == "extension":
        extra["RAWP_PERMISSION_TOOLS"] = ",".join(settings.permission_tools)
        if dialog_timeout_ms is not None:
            extra["RAWP_PERMISSION_TIMEOUT_MS"] = str(
                dialog_timeout_ms + _EXTENSION_TIMEOUT_MARGIN_MS
            )
    return agent_environment(
        settings, session_id=session_id, workspace=workspace, extra=extra, parent=parent
    )
