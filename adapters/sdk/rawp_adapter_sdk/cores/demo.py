"""The demo core: a scripted stand-in for an agent library, for trying the adapter on a
fresh machine. Pure Python, no model, no network.

Every prompt gets the same little play: it thinks, says what it will do, asks
permission to write a note into a file in the workspace (``write_file``; the last file
name the prompt mentions, e.g. ``notes.txt``, or ``rawp-demo.txt``), writes it only if
allowed (with the Master's edited input, if any), and reports back.

A prompt that says ``call host tool <name>`` (optionally ``with {json input}``) calls
that tool of the Master's instead of writing the file (the Master is asked permission
first), and reports what it answered.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path, PurePath
from typing import Any

import anyio

from rawp_adapter_sdk._core import (
    Allow,
    CoreEnvironment,
    CoreFeatures,
    Deny,
    PermissionCallback,
    PermissionRequest,
)
from rawp_adapter_sdk.events import (
    CoreEvent,
    Stopped,
    TextChunk,
    TextEnd,
    ThinkingChunk,
    ThinkingEnd,
    ToolFinished,
    ToolProgress,
    ToolStarted,
    UsageReport,
)
from rawp_adapters import HostToolCall
from rawp_adapters.frames import HostTool

DEMO_TOOL = "write_file"
DEFAULT_FILE_NAME = "rawp-demo.txt"


class DemoCore:
    """Options: ``file_name`` (relative to the workspace) for prompts that name no file,
    ``delay_ms`` between streamed words."""

    def __init__(self, *, file_name: str = DEFAULT_FILE_NAME, delay_ms: int = 15) -> None:
        if not isinstance(file_name, str) or not _is_relative_inside(file_name):
            raise ValueError(
                f"file_name must be a relative path inside the workspace: {file_name!r}"
            )
        if not isinstance(delay_ms, int) or delay_ms < 0:
            raise ValueError(f"delay_ms must be a non-negative integer: {delay_ms!r}")
        self.file_name = file_name
        self.delay = delay_ms / 1000
        self._workspace: Path | None = None
        self._env: CoreEnvironment | None = None
        self.tools: list[str] = []
        """The names of the Master's tools it was given."""
        self._cancelled = anyio.Event()
        self._calls = itertools.count(1)

    @property
    def name(self) -> str:
        return "rawp-demo"

    @property
    def version(self) -> str | None:
        return "1"

    @property
    def features(self) -> CoreFeatures:
        return CoreFeatures(
            thinking=True, tool_events=True, permission_requests=True, abort=True, host_tools=True
        )

    async def start(self, env: CoreEnvironment) -> None:
        self._workspace = env.workspace
        self._env = env

    async def publish_tools(self, tools: Sequence[HostTool]) -> None:
        self.tools = [tool.name for tool in tools]

    async def cancel(self) -> None:
        self._cancelled.set()

    async def close(self) -> None:
        self._cancelled.set()

    async def run(self, prompt: str, permission: PermissionCallback) -> AsyncIterator[CoreEvent]:
        self._cancelled = anyio.Event()
        host_call = _host_call_in(prompt)
        if host_call is not None:
            async for event in self._call_host(*host_call):
                yield event
            return
        words = 0
        file_name = _file_name_in(prompt) or self.file_name
        thought = f"No model here, only a script. I will note the request down in {file_name}."
        async for event in self._stream(0, thought, thinking=True):
            words += 1
            yield event
        async for event in self._stream(1, f"I'll write a note to {file_name}."):
            words += 1
            yield event
        if self._cancelled.is_set():
            yield Stopped("cancelled")
            return

        call_id = f"demo-call-{next(self._calls)}"
        tool_input = {"path": file_name, "content": _note(prompt)}
        yield ToolStarted(call_id=call_id, tool_name=DEMO_TOOL, input=tool_input)
        decision = await permission(
            PermissionRequest(
                tool_name=DEMO_TOOL,
                tool_input=tool_input,
                tool_call_id=call_id,
                title=f"Write {file_name} in the workspace?",
            )
        )
        if isinstance(decision, Deny):
            yield ToolFinished(call_id=call_id, output=decision.message, is_error=True)
            if decision.stops_turn or self._cancelled.is_set():
                yield Stopped("cancelled")
                return
            reply = f"I did not write the file: {decision.message}"
        else:
            target = self._target(decision, tool_input)
            if isinstance(target, str):
                yield ToolFinished(call_id=call_id, output=target, is_error=True)
                reply = f"I could not write the file: {target}"
            else:
                path, content = target
                yield ToolProgress(call_id=call_id, output=f"writing {len(content)} characters\n")
                try:
                    await anyio.Path(path.parent).mkdir(parents=True, exist_ok=True)
                    await anyio.Path(path).write_text(content, encoding="utf-8")
                except OSError as exc:
                    failure = f"{type(exc).__name__}: {exc.strerror or exc}"
                    yield ToolFinished(call_id=call_id, output=failure, is_error=True)
                    reply = f"I could not write the file: {failure}"
                else:
                    done = f"Wrote {len(content)} characters to {path.name}."
                    yield ToolFinished(call_id=call_id, output=done)
                    reply = f"Done. {done}"
        async for event in self._stream(2, reply):
            words += 1
            yield event
        yield UsageReport(input_tokens=len(prompt.split()), output_tokens=words)
        yield Stopped("cancelled" if self._cancelled.is_set() else "end_turn")

    async def _call_host(
        self, tool_name: str, tool_input: Mapping[str, Any] | str
    ) -> AsyncIterator[CoreEvent]:
        """Call the Master's ``tool_name``; its streamed output is said as it comes."""
        assert self._env is not None, "run() before start()"
        async for event in self._stream(0, f"I'll ask the Master to run {tool_name}."):
            yield event
        if isinstance(tool_input, str):
            reply = f"I could not call {tool_name}: {tool_input}"
        else:
            progress: list[str] = []

            async def on_progress(output: str) -> None:
                progress.append(output)

            call = HostToolCall(
                f"demo-call-{next(self._calls)}", tool_name, tool_input, permission=True
            )
            outcome = await self._env.call_host_tool(call, on_progress)
            said = "".join(progress)
            if outcome.is_error:
                reply = f"{tool_name} failed: {outcome.text}"
            else:
                reply = f"{tool_name} said: {said}{outcome.text}"
        async for event in self._stream(1, reply):
            yield event
        yield Stopped("cancelled" if self._cancelled.is_set() else "end_turn")

    async def _stream(
        self, index: int, text: str, *, thinking: bool = False
    ) -> AsyncIterator[CoreEvent]:
        words = text.split(" ")
        for i, word in enumerate(words):
            if self._cancelled.is_set():
                break
            piece = word if i == len(words) - 1 else word + " "
            yield ThinkingChunk(index, piece) if thinking else TextChunk(index, piece)
            if self.delay:
                with anyio.move_on_after(self.delay):
                    await self._cancelled.wait()
        yield ThinkingEnd(index, text) if thinking else TextEnd(index, text)

    def _target(self, decision: Allow, original: Mapping[str, Any]) -> tuple[Path, str] | str:
        """Where to write what, from the (possibly edited) input; or why it cannot be."""
        tool_input = decision.updated_input if decision.updated_input is not None else original
        path, content = tool_input.get("path"), tool_input.get("content")
        if not isinstance(path, str) or not isinstance(content, str):
            return "write_file needs a string path and a string content"
        assert self._workspace is not None, "run() before start()"
        target = self._workspace / path
        if not _is_relative_inside(path) or not target.resolve().is_relative_to(
            self._workspace.resolve()
        ):
            return f"{path!r} is not a path inside the workspace"
        return target, content


def _is_relative_inside(path: str) -> bool:
    parts = PurePath(path).parts
    return bool(parts) and not PurePath(path).is_absolute() and ".." not in parts


_TRAILING_PUNCTUATION = ".,;:!?\"')"
_FILE_NAME = re.compile(r"[\w-]+(?:\.[\w-]+)*\.[A-Za-z][A-Za-z0-9]{1,9}")


def _file_name_in(prompt: str) -> str | None:
    """The last word of the prompt that looks like a file name (``notes.txt``), if any."""
    for word in reversed(prompt.split()):
        candidate = word.strip(_TRAILING_PUNCTUATION + "\"'(")
        if _FILE_NAME.fullmatch(candidate):
            return candidate
    return None


_HOST_CALL = re.compile(r"call host tool ([A-Za-z0-9_.-]+)(?: with (\{.*\}))?", re.DOTALL)


def _host_call_in(prompt: str) -> tuple[str, Mapping[str, Any] | str] | None:
    """``(tool name, input)`` when the prompt asks for a host tool; instead of the input,
    why it is not JSON when it is not."""
    match = _HOST_CALL.search(prompt)
    if match is None:
        return None
    if match.group(2) is None:
        return match.group(1), {}
    try:
        tool_input: dict[str, Any] = json.loads(match.group(2))
    except ValueError as exc:
        return match.group(1), f"its input is not JSON ({exc})"
    return match.group(1), tool_input


def _note(prompt: str) -> str:
    return (
        f"You asked: {prompt}\n\n"
        "Written by the rawp-adapters demo core. It has no model, so this note is all it can\n"
        "write; run a real core (e.g. core=claude) for real work.\n"
    )
