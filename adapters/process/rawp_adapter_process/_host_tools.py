"""The Master's tools in the agent (omp's host tool sub-protocol).

``set_host_tools`` publishes them; the agent calls one with ``host_tool_call`` and waits
for ``host_tool_result``; ``host_tool_update`` carries progress (cumulative, as the
agent's own partial results are); ``host_tool_cancel`` says it stopped waiting (an
abort), after which it ignores any result. Each call runs in a task of its own, so the
agent's stream keeps flowing while the Master works. The agent's tool call id is the
call's invocation id: the session runtime reports the call, and the translator drops the
agent's own events of it.

A tool is published as ``essential``, so that omp offers it to the model among its own
tools; omp mounts a tool published without a ``loadMode`` as a "device" the model can
only run by writing its arguments to ``xd://<name>`` with ``write``. The model may still
do that for any tool: such a write is the host call (see
:meth:`Translator.host_tool_of`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final

import anyio

from rawp_adapter_process._commands import AgentGone, CommandChannel
from rawp_adapter_process._models import HostToolNames, decode_as
from rawp_adapter_process._settings import ALL_TOOLS, ProcessSettings
from rawp_adapter_process._translate import Translator
from rawp_adapter_process._wire import HostToolCallRequest, HostToolCancel
from rawp_adapters import HostToolCall, OperationRejected, SessionContext
from rawp_adapters.frames import HostTool

Background = Callable[[Callable[[], Awaitable[object]], str], None]

BUILTIN_TOOL_NAMES: Final = frozenset(
    {
        "ask",
        "ast_edit",
        "ast_grep",
        "bash",
        "checkpoint",
        "context_notes",
        "debug",
        "edit",
        "eval",
        "find",
        "github",
        "glob",
        "grep",
        "hub",
        "learn",
        "ls",
        "lsp",
        "manage_skill",
        "memory_edit",
        "new_context",
        "notebook",
        "python",
        "read",
        "recall",
        "reflect",
        "retain",
        "rewind",
        "search",
        "security_scan",
        "ssh",
        "task",
        "todo",
        "web_search",
        "write",
        "",
    }
)
"""omp 18.2.3's own tools and aliases. A host tool named like one (in any case) is
confirmed by ``set_host_tools`` but folded onto the built-in: the model never sees it."""


def host_tool_definition(tool: HostTool) -> dict[str, Any]:
    """An ``RpcHostToolDefinition`` (the agent wants a non-empty description), in the
    model's list of tools."""
    return {
        "name": tool.name,
        "label": tool.name,
        "description": tool.description or tool.name,
        "parameters": tool.input_schema,
        "loadMode": "essential",
    }


class HostTools:
    def __init__(
        self,
        settings: ProcessSettings,
        ctx: SessionContext,
        channel: CommandChannel,
        translator: Translator,
        background: Background,
    ) -> None:
        self._settings = settings
        self._ctx = ctx
        self._channel = channel
        self._translator = translator
        self._background = background
        self._open: dict[str, anyio.CancelScope] = {}
        gated = {name.lower() for name in settings.permission_tools}
        self._gate_all = ALL_TOOLS in gated
        self._gated = gated if settings.approval != "none" else set()

    def gated(self, tool_name: str) -> bool:
        """The adapter's permission gate covers ``tool_name`` (the runtime asks)."""
        if not self._gated:
            return False
        return self._gate_all or tool_name.lower() in self._gated

    async def publish(self, tools: Sequence[HostTool]) -> None:
        taken = sorted(t.name for t in tools if t.name.lower() in BUILTIN_TOOL_NAMES)
        if taken:
            raise OperationRejected(
                f"the agent has built-in tools named {', '.join(taken)} (in any case) and "
                "would never offer host tools of those names to the model; publish them "
                "under other names"
            )
        command = {"type": "set_host_tools", "tools": [host_tool_definition(t) for t in tools]}
        try:
            response = await self._channel.request(command, timeout=self._settings.command_timeout)
        except (TimeoutError, AgentGone) as exc:
            raise OperationRejected(f"the agent did not take the tools: {exc!r}") from exc
        if not response.success:
            raise OperationRejected(f"the agent refused the tools: {response.error}")
        self._translator.host_tools = frozenset(decode_as(response.data, HostToolNames).toolNames)

    def on_call(self, call: HostToolCallRequest) -> None:
        self._translator.claim_host_call(call.toolCallId)
        scope = self._open[call.id] = anyio.CancelScope()
        turn_id = self._translator.turn_id
        self._background(lambda: self._run(call, scope, turn_id), "host tool call")

    def on_cancel(self, cancel: HostToolCancel) -> None:
        scope = self._open.get(cancel.targetId)
        if scope is not None:
            scope.cancel()

    async def _run(
        self, call: HostToolCallRequest, scope: anyio.CancelScope, turn_id: str | None
    ) -> None:
        sent: list[str] = []

        async def progress(output: str) -> None:
            sent.append(output)
            await self._send(
                {
                    "type": "host_tool_update",
                    "id": call.id,
                    "partialResult": {"content": [{"type": "text", "text": "".join(sent)}]},
                }
            )

        request = HostToolCall(
            call.toolCallId,
            call.toolName,
            call.arguments,
            turn_id=turn_id,
            permission=self.gated(call.toolName),
        )
        try:
            with scope:
                outcome = await self._ctx.call_host_tool(request, progress)
                answer: dict[str, Any] = {
                    "type": "host_tool_result",
                    "id": call.id,
                    "result": {"content": [{"type": "text", "text": outcome.text}]},
                }
                if outcome.is_error:
                    answer["isError"] = True
                await self._send(answer)
        finally:
            self._open.pop(call.id, None)

    async def _send(self, message: dict[str, Any]) -> None:
        with contextlib.suppress(AgentGone):  # the agent is gone: nobody waits for it
            await self._channel.send(message)
