"""The core's function tools: its own workspace tools and the Master's tools.

``write_file`` always needs approval (the run pauses with an interruption the Master
answers); ``read_file`` only when the Master gates every tool. Both stay inside the
workspace; a call the Master allowed with edited input runs with that input (the
SDK's approval takes none). A Master's tool calls the Master (``permission=True``: the
Master is asked first, through the host call). A tool never raises: a failure is its
output, and its call id goes to ``failed`` so that the result is reported as an error.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path, PurePath
from typing import Any

import anyio
from agents import FunctionTool
from agents.tool_context import ToolContext

from rawp_adapters import HostToolCall, HostToolOutcome
from rawp_adapters.frames import HostTool

Failed = Callable[[str], None]
HostCaller = Callable[[HostToolCall], Awaitable[HostToolOutcome]]

WRITE_FILE = "write_file"
READ_FILE = "read_file"
WORKSPACE_TOOLS = (READ_FILE, WRITE_FILE)

_PATH = {"type": "string", "description": "A path relative to the workspace."}
_SCHEMAS: Mapping[str, dict[str, Any]] = {
    WRITE_FILE: {
        "type": "object",
        "properties": {"path": _PATH, "content": {"type": "string"}},
        "required": ["path", "content"],
        "additionalProperties": False,
    },
    READ_FILE: {
        "type": "object",
        "properties": {"path": _PATH},
        "required": ["path"],
        "additionalProperties": False,
    },
}
_DESCRIPTIONS = {
    WRITE_FILE: "Write a text file in the workspace (asks the user first).",
    READ_FILE: "Read a text file of the workspace.",
}


def _inside(workspace: Path, path: object) -> Path | str:
    """The file ``path`` names inside ``workspace``, or why it is not one."""
    if not isinstance(path, str) or not path:
        return "path must be a non-empty string"
    pure = PurePath(path)
    target = workspace / path
    if (
        pure.is_absolute()
        or ".." in pure.parts
        or not target.resolve().is_relative_to(workspace.resolve())
    ):
        return f"{path!r} is not a path inside the workspace"
    return target


async def _write(workspace: Path, args: Mapping[str, Any]) -> tuple[str, bool]:
    target, content = _inside(workspace, args.get("path")), args.get("content")
    if isinstance(target, str):
        return target, False
    if not isinstance(content, str):
        return "content must be a string", False
    await anyio.Path(target.parent).mkdir(parents=True, exist_ok=True)
    await anyio.Path(target).write_text(content, encoding="utf-8")
    return f"Wrote {len(content)} characters to {args['path']}.", True


async def _read(workspace: Path, args: Mapping[str, Any]) -> tuple[str, bool]:
    target = _inside(workspace, args.get("path"))
    if isinstance(target, str):
        return target, False
    return await anyio.Path(target).read_text(encoding="utf-8"), True


_RUN = {WRITE_FILE: _write, READ_FILE: _read}


def _parse(input_json: str) -> dict[str, Any] | str:
    try:
        parsed = json.loads(input_json or "{}")
    except ValueError as exc:
        return f"the arguments are not JSON ({exc})"
    return parsed if isinstance(parsed, dict) else "the arguments are not a JSON object"


def workspace_tools(
    workspace: Path,
    names: Sequence[str],
    *,
    gate_all: bool,
    failed: Failed,
    edited: dict[str, dict[str, Any]],
) -> list[FunctionTool]:
    """``edited``: the Master's input by call id, for calls it allowed with edits (each
    taken once, when the call runs)."""

    def make(name: str) -> FunctionTool:
        async def invoke(ctx: ToolContext[Any], input_json: str) -> str:
            edit = edited.pop(ctx.tool_call_id, None)
            args = edit if edit is not None else _parse(input_json)
            try:
                output, ok = (
                    await _RUN[name](workspace, args)
                    if isinstance(args, dict)
                    else (
                        args,
                        False,
                    )
                )
            except OSError as exc:
                output, ok = f"{type(exc).__name__}: {exc.strerror or exc}", False
            if not ok:
                failed(ctx.tool_call_id)
            return output

        return FunctionTool(
            name=name,
            description=_DESCRIPTIONS[name],
            params_json_schema=_SCHEMAS[name],
            on_invoke_tool=invoke,
            needs_approval=gate_all or name == WRITE_FILE,
        )

    return [make(name) for name in names]


def host_tools(tools: Sequence[HostTool], call: HostCaller, failed: Failed) -> list[FunctionTool]:
    def make(tool: HostTool) -> FunctionTool:
        async def invoke(ctx: ToolContext[Any], input_json: str) -> str:
            args = _parse(input_json)
            if isinstance(args, str):
                failed(ctx.tool_call_id)
                return args
            outcome = await call(HostToolCall(ctx.tool_call_id, tool.name, args, permission=True))
            if outcome.is_error:
                failed(ctx.tool_call_id)
            return outcome.text

        return FunctionTool(
            name=tool.name,
            description=tool.description,
            params_json_schema=tool.input_schema,
            on_invoke_tool=invoke,
            strict_json_schema=False,
        )

    return [make(tool) for tool in tools]
