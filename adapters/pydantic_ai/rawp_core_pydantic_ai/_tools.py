"""The core's own function tools, which a Master enables with the ``tools`` option, and
the Master's published tools as pydantic-ai external (deferred) tools."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path, PurePath

import anyio
from pydantic_ai import Tool
from pydantic_ai.exceptions import ToolFailed
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import FunctionToolset
from pydantic_ai.toolsets.external import ExternalToolset

from rawp_adapters.frames import HostTool

WRITE_TOOL = "write"
BUILTIN_TOOLS = (WRITE_TOOL,)


def _inside(workspace: Path, path: str) -> Path:
    """``path`` resolved in the workspace; :class:`ToolFailed` if it leads outside."""
    relative = PurePath(path)
    target = (workspace / relative).resolve()
    if relative.is_absolute() or not target.is_relative_to(workspace.resolve()):
        raise ToolFailed(f"{path!r} is not a path inside the workspace")
    return target


def builtin_toolset(workspace: Path, enabled: Sequence[str]) -> FunctionToolset[None]:
    """The enabled tools of :data:`BUILTIN_TOOLS`, each asking the Master first."""

    async def write(path: str, content: str) -> str:
        """Write ``content`` to the file ``path`` (relative to the workspace), replacing it."""
        target = _inside(workspace, path)
        try:
            await anyio.Path(target.parent).mkdir(parents=True, exist_ok=True)
            await anyio.Path(target).write_text(content, encoding="utf-8")
        except OSError as exc:
            raise ToolFailed(f"{type(exc).__name__}: {exc.strerror or exc}") from exc
        return f"Wrote {len(content)} characters to {path}."

    tools = {WRITE_TOOL: Tool(write, name=WRITE_TOOL, requires_approval=True)}
    return FunctionToolset([tools[name] for name in enabled])


def host_toolset(tools: Sequence[HostTool]) -> ExternalToolset[None]:
    """The Master's tools: a call ends the run as a deferred call the core makes."""
    return ExternalToolset(
        [
            ToolDefinition(
                name=tool.name,
                description=tool.description,
                parameters_json_schema=dict(tool.input_schema),
            )
            for tool in tools
        ]
    )
