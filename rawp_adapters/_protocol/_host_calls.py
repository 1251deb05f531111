"""The Master's own tools in a session: the published catalog, and the calls the
Master has yet to answer.

Every host tool call gets exactly one ``tool.invoke.result`` before its turn ends,
whoever ends it (the Master, the deadline, an abort, the session's end). A call the
Master cannot be asked (tool not published, input against its schema, permission
denied) is reported as a request the agent runs (no ``executor``) with its error
result at once, so no Master answers it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Final

import msgspec

from rawp_adapters._adapter import HostToolCall, HostToolOutcome
from rawp_adapters._frames import (
    ClientPayload,
    FrameMetadata,
    HostCallResolution,
    HostTool,
    ToolInvokeRequest,
    ToolInvokeResult,
    ToolInvokeStream,
    ToolResult,
    ToolStream,
)
from rawp_adapters._protocol._effects import Effect, HostCallProgress, SettleHostCall

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator
    from structlog.stdlib import BoundLogger

REMEMBERED_FINISHED_CALLS: Final = 1024
"""Finished host call ids kept: the agent's own later reports of them are dropped,
and a late answer is told apart from an unknown one."""
MAX_CATALOG_TOOLS: Final = 256
_ENDED: Final[dict[HostCallResolution, str]] = {
    "deadline": "the Master did not answer within {timeout_ms} ms",
    "cancelled": "the call was cancelled (the turn was aborted or the agent stopped waiting)",
    "session_end": "the session ended before the Master answered",
}

Put = Callable[[ClientPayload, FrameMetadata | None], None]


# A msgspec Struct, not a dataclass: defined at each ``serve --stdio`` start, ~40x faster.
class _OpenCall(msgspec.Struct):
    tool_name: str
    turn_id: str | None
    timeout_ms: int


class HostCalls:
    """The host tool catalog and the open calls, by invocation id."""

    def __init__(self, put: Put, log: BoundLogger, *, max_open: int) -> None:
        self._put = put
        self._log = log
        self._max_open = max_open
        self._validators: dict[str, Draft202012Validator] = {}
        self._open: dict[str, _OpenCall] = {}
        self._finished: OrderedDict[str, HostCallResolution] = OrderedDict()

    # ------------------------------------------------------------ catalog

    @staticmethod
    def catalog_problem(tools: Iterable[HostTool]) -> str | None:
        """Why ``tools`` cannot be published, or None."""
        # jsonschema is imported by the first catalog: a session without host tools
        # (and a bridge's cold start) does without it.
        from jsonschema import Draft202012Validator, SchemaError

        names: set[str] = set()
        for tool in tools:
            if tool.name in names:
                return f"tool {tool.name!r} is published twice"
            names.add(tool.name)
            try:
                Draft202012Validator.check_schema(tool.input_schema)
            except SchemaError as exc:
                return f"the input_schema of {tool.name!r} is not a JSON Schema: {exc.message}"
            if tool.input_schema.get("type", "object") != "object":
                return f"the input_schema of {tool.name!r} must describe an object"
        if len(names) > MAX_CATALOG_TOOLS:
            return f"{len(names)} tools is more than the limit of {MAX_CATALOG_TOOLS}"
        return None

    def set_catalog(self, tools: Iterable[HostTool]) -> list[str]:
        from jsonschema import Draft202012Validator

        self._validators = {tool.name: Draft202012Validator(tool.input_schema) for tool in tools}
        return list(self._validators)

    @property
    def published(self) -> bool:
        return bool(self._validators)

    # ------------------------------------------------------------ calls

    def owns(self, invocation_id: str) -> bool:
        """The call is a host call: its frames are the runtime's, not the adapter's."""
        return invocation_id in self._open or invocation_id in self._finished

    def refusal(self, call: HostToolCall) -> tuple[HostCallResolution, str] | None:
        """Why the Master must not be asked about ``call``, or None."""
        validator = self._validators.get(call.tool_name)
        if validator is None:
            return "unknown_tool", f"{call.tool_name!r} is not a published host tool"
        from jsonschema.exceptions import best_match

        error = best_match(validator.iter_errors(dict(call.input)))
        if error is not None:
            where = "/".join(str(part) for part in error.absolute_path) or "the input"
            return (
                "invalid_input",
                f"invalid input for {call.tool_name!r} at {where}: {error.message}",
            )
        if call.invocation_id in self._open or call.invocation_id in self._finished:
            return "invalid_input", f"call {call.invocation_id!r} was made already"
        if len(self._open) >= self._max_open:
            return "denied", f"more than {self._max_open} host tool calls are open"
        return None

    def refuse(
        self, call: HostToolCall, resolution: HostCallResolution, message: str
    ) -> HostToolOutcome:
        """Report ``call`` as refused (request and its error result) and tell the agent."""
        self._log.info(
            "host tool call refused",
            invocation_id=call.invocation_id,
            tool_name=call.tool_name,
            resolution=resolution,
        )
        self._put(
            ToolInvokeRequest(
                invocation_id=call.invocation_id,
                tool_name=call.tool_name,
                input=dict(call.input),
                turn_id=call.turn_id,
            ),
            None,
        )
        return self._finish(call.invocation_id, call.turn_id, resolution, message)

    def open(self, call: HostToolCall, timeout_ms: int) -> ToolInvokeRequest:
        request = ToolInvokeRequest(
            invocation_id=call.invocation_id,
            tool_name=call.tool_name,
            input=dict(call.input),
            turn_id=call.turn_id,
            executor="master",
            timeout_ms=timeout_ms,
        )
        self._open[call.invocation_id] = _OpenCall(call.tool_name, call.turn_id, timeout_ms)
        self._put(request, None)
        return request

    def progress(self, stream: ToolStream, metadata: FrameMetadata | None) -> list[Effect] | None:
        """The Master streams output; None when no such call is open."""
        pending = self._open.get(stream.invocation_id)
        if pending is None:
            return None
        self._put(
            ToolInvokeStream(
                invocation_id=stream.invocation_id, output=stream.output, turn_id=pending.turn_id
            ),
            metadata,
        )
        return [HostCallProgress(stream.invocation_id, stream.output)]

    def answer(self, result: ToolResult, metadata: FrameMetadata | None) -> list[Effect] | None:
        """The Master's result; None when no such call is open."""
        pending = self._open.pop(result.invocation_id, None)
        if pending is None:
            return None
        outcome = HostToolOutcome(
            output=result.output, output_type=result.output_type, is_error=result.is_error
        )
        self._put(self._result(result.invocation_id, pending.turn_id, outcome), metadata)
        self._remember(result.invocation_id, "answered")
        return [SettleHostCall(result.invocation_id, outcome)]

    def settle(self, invocation_id: str, resolution: HostCallResolution) -> list[Effect]:
        """End an open call with an error result (deadline, cancelled, session end)."""
        pending = self._open.pop(invocation_id, None)
        if pending is None:
            return []
        message = _ENDED[resolution].format(timeout_ms=pending.timeout_ms)
        outcome = self._finish(invocation_id, pending.turn_id, resolution, message)
        return [SettleHostCall(invocation_id, outcome)]

    def settle_turn(self, turn_id: str) -> list[Effect]:
        return [
            effect
            for invocation_id in [i for i, call in self._open.items() if call.turn_id == turn_id]
            for effect in self.settle(invocation_id, "cancelled")
        ]

    def settle_all(self) -> list[Effect]:
        return [
            effect
            for invocation_id in list(self._open)
            for effect in self.settle(invocation_id, "session_end")
        ]

    def late_or_unknown(self, invocation_id: str) -> str:
        finished = self._finished.get(invocation_id)
        if finished is not None:
            return f"host tool call {invocation_id} has already ended ({finished}); ignored"
        return f"no open host tool call {invocation_id}; ignored"

    # ------------------------------------------------------------ helpers

    def _finish(
        self,
        invocation_id: str,
        turn_id: str | None,
        resolution: HostCallResolution,
        message: str,
    ) -> HostToolOutcome:
        outcome = HostToolOutcome(output=message, is_error=True, resolution=resolution)
        self._put(self._result(invocation_id, turn_id, outcome), None)
        self._remember(invocation_id, resolution)
        return outcome

    @staticmethod
    def _result(
        invocation_id: str, turn_id: str | None, outcome: HostToolOutcome
    ) -> ToolInvokeResult:
        return ToolInvokeResult(
            invocation_id=invocation_id,
            output_type=outcome.output_type,
            output=outcome.output,
            is_error=outcome.is_error,
            turn_id=turn_id,
            resolution=outcome.resolution,
        )

    def _remember(self, invocation_id: str, resolution: HostCallResolution) -> None:
        self._finished[invocation_id] = resolution
        while len(self._finished) > REMEMBERED_FINISHED_CALLS:
            self._finished.popitem(last=False)
