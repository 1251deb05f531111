"""One session's host side: the one loop that reads its frames, answers its questions
by a policy and runs the Master's tools for it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from contextlib import suppress

import anyio
from anyio.abc import TaskGroup, TaskStatus

from rawp_adapters._errors import RawpError, SessionClosedError
from rawp_adapters._frames import (
    ClientFrame,
    ControlFrame,
    DelegationLink,
    InteractionRequest,
    InteractionRequestFrame,
    InteractionResolvedFrame,
    SessionErrorCode,
    SessionErrorFrame,
    ToolCatalogUpdatedFrame,
    ToolInvokeRequest,
    ToolInvokeRequestFrame,
    ToolInvokeResultFrame,
)
from rawp_adapters._logging import get_logger
from rawp_adapters._session import Session
from rawp_adapters._telemetry import attach
from rawp_adapters.host._answers import Send, _Asking
from rawp_adapters.host._policies import Policy, Reply, deny_all
from rawp_adapters.host._tools import HostTools, ToolCall, ToolError, ToolOutput, tool_output

_log = get_logger("rawp_adapters.host")

_CATALOG_REFUSED = frozenset({SessionErrorCode.INVALID_TOOL_CATALOG, SessionErrorCode.UNSUPPORTED})


class CatalogRefused(RawpError):
    """The session did not take the tools (the agent has no host tools, or the catalog
    is invalid), or it closed first."""


class DelegatedRequest(InteractionRequest):
    """A sub-agent's question, as the Master's policy sees it: the request, and the
    delegation chain that led to the sub-agent (outermost first)."""

    delegation_chain: list[DelegationLink]


class Host:
    """Serves one session for a Master: :meth:`run` reads its frames to the end, answers
    ``agent.interaction.request`` by ``policy`` and ``tool.invoke.request`` frames with
    ``executor: "master"`` by ``tools``, each in a task of its own.

    A call the runtime ends otherwise (a ``tool.invoke.result`` for it: deadline, abort,
    session end) cancels its handler; a handler that raises answers with an error
    result. ``on_frame`` sees every frame first; ``send`` (default ``session.send``)
    sends every answer.

    ``delegation_chain`` and ``allowed_tools`` are set for a sub-agent's session (see
    :class:`~rawp_adapters.host.Delegation`): its PERMISSION requests for other tools
    are denied here, and the policy is asked with a :class:`DelegatedRequest`.
    """

    def __init__(
        self,
        session: Session,
        tools: HostTools | None = None,
        policy: Policy = deny_all,
        *,
        on_frame: Callable[[ClientFrame], object] | None = None,
        send: Send | None = None,
        delegation_chain: Iterable[DelegationLink] = (),
        allowed_tools: Iterable[str] | None = None,
    ) -> None:
        self.session = session
        self.tools = tools if tools is not None else HostTools()
        self.policy = policy
        self.delegation_chain = tuple(delegation_chain)
        self.allowed_tools = frozenset(allowed_tools) if allowed_tools is not None else None
        self._on_frame = on_frame
        self._send = send or session.send
        self._calls: dict[str, anyio.CancelScope] = {}
        self._publishing: _Publishing | None = None

    async def send(self, frame: ControlFrame) -> None:
        """Send ``frame`` unless the session has closed meanwhile."""
        with suppress(SessionClosedError):
            await self._send(frame)

    async def run(self, *, task_status: TaskStatus[list[str]] = anyio.TASK_STATUS_IGNORED) -> None:
        """Serve the session until ``session.closed``. The tools are published first:
        with ``await tg.start(host.run)`` the caller goes on once the agent has them
        (``start`` returns their names), or gets :class:`CatalogRefused` (and the
        session is not served)."""
        refused: CatalogRefused | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._read, tg)
            try:
                names = await self.publish() if len(self.tools) else []
            except CatalogRefused as exc:
                refused = exc
                tg.cancel_scope.cancel()
            else:
                task_status.started(names)
        if refused is not None:
            raise refused

    async def _read(self, tg: TaskGroup) -> None:
        asking = _Asking(self.session, self._decide, self._send, tg)
        async for frame in self.session:
            if self._on_frame is not None:
                self._on_frame(frame)
            if isinstance(frame, InteractionRequestFrame):
                asking.start(frame.payload)
            elif isinstance(frame, InteractionResolvedFrame):
                asking.stop(frame.payload.interaction_id)
            elif isinstance(frame, ToolInvokeRequestFrame):
                if frame.payload.executor == "master":
                    self._start_call(tg, frame.payload)
            elif isinstance(frame, ToolInvokeResultFrame):
                self._stop_call(frame.payload.invocation_id)
            elif self._publishing is not None:
                self._publishing.see(frame)
        if self._publishing is not None:  # run() raises it, ending the task group
            self._publishing.fail("the session closed before the agent took the tools")
        else:
            tg.cancel_scope.cancel()

    async def publish(self, tools: HostTools | None = None) -> list[str]:
        """Publish ``tools`` (default: this host's), replacing the session's catalog,
        and return the names the agent confirmed; call it while :meth:`run` runs.
        Raises :class:`CatalogRefused`."""
        if tools is not None:
            self.tools = tools
        if not self.session.features.host_tools:
            raise CatalogRefused("this agent does not take host tools")
        if self._publishing is not None:
            raise RuntimeError("a publish is under way already")
        publishing = self._publishing = _Publishing()
        try:
            await self.send(self.session.control.publish_tools(self.tools.specs))
            return await publishing.result()
        finally:
            self._publishing = None

    def _decide(self, request: InteractionRequest) -> Reply | Awaitable[Reply | None] | None:
        allowed = self.allowed_tools
        tool_name = request.context.tool_name
        permission = request.interaction_type == "PERMISSION"
        if permission and allowed is not None and tool_name not in allowed:
            _log.info("sub-agent permission denied: tool not allowed", tool_name=tool_name)
            return Reply.deny()
        if self.delegation_chain:
            request = DelegatedRequest.model_validate(
                {**request.model_dump(), "delegation_chain": self.delegation_chain}
            )
        return self.policy(request)

    def _start_call(self, tg: TaskGroup, request: ToolInvokeRequest) -> None:
        scope = self._calls[request.invocation_id] = anyio.CancelScope()
        call = ToolCall(
            self,
            invocation_id=request.invocation_id,
            tool_name=request.tool_name,
            input=request.input,
            turn_id=request.turn_id,
        )
        tg.start_soon(self._run_call, scope, call)

    def _stop_call(self, invocation_id: str) -> None:
        scope = self._calls.pop(invocation_id, None)
        if scope is not None:
            scope.cancel()

    async def _run_call(self, scope: anyio.CancelScope, call: ToolCall) -> None:
        # The tool runs in its execute_tool span: what it traces (a sub-agent's turn,
        # an HTTP call) nests under the call.
        with scope, attach(self.session.tool_call_context(call.invocation_id)):
            try:
                result = await self._result_of(call)
                control = self.session.control
                await self.send(
                    control.tool_result(
                        call.invocation_id,
                        result.output,
                        output_type=result.output_type,
                        is_error=result.is_error,
                        metadata=result.metadata,
                    )
                )
            finally:
                self._calls.pop(call.invocation_id, None)

    async def _result_of(self, call: ToolCall) -> ToolOutput:
        tool = self.tools.get(call.tool_name)
        if tool is None:
            return ToolOutput(f"the Master has no tool {call.tool_name!r}", is_error=True)
        try:
            return tool_output(await tool.run(call))
        except ToolError as exc:
            return ToolOutput(str(exc), is_error=True)
        except Exception as exc:
            _log.exception("host tool failed", tool_name=call.tool_name)
            return ToolOutput(str(exc) or type(exc).__name__, is_error=True)


class _Publishing:
    """A publish waiting for the agent's ``tool.catalog.updated`` (or a refusal)."""

    def __init__(self) -> None:
        self._done = anyio.Event()
        self._names: list[str] = []
        self._problem: str | None = None

    def see(self, frame: ClientFrame) -> None:
        if isinstance(frame, ToolCatalogUpdatedFrame):
            self._names = list(frame.payload.tools)
            self._done.set()
        elif isinstance(frame, SessionErrorFrame) and frame.payload.error_code in _CATALOG_REFUSED:
            self.fail(frame.payload.message)

    def fail(self, problem: str) -> None:
        if not self._done.is_set():
            self._problem = problem
            self._done.set()

    async def result(self) -> list[str]:
        await self._done.wait()
        if self._problem is not None:
            raise CatalogRefused(self._problem)
        return self._names


async def serve_host(
    session: Session,
    tools: HostTools | None = None,
    policy: Policy = deny_all,
    *,
    on_frame: Callable[[ClientFrame], object] | None = None,
    send: Send | None = None,
    task_status: TaskStatus[list[str]] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``session`` with ``tools`` and ``policy`` to its end: :meth:`Host.run`.
    ``await tg.start(serve_host, session, tools, policy)`` returns once the agent has
    the tools."""
    await Host(session, tools, policy, on_frame=on_frame, send=send).run(task_status=task_status)
