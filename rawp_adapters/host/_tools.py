"""Declaring host tools: tools the Master publishes to a session and runs itself.

A tool is a name, a description, the JSON Schema of its input and an async handler.
:meth:`HostTools.tool` makes one from a function: its parameters are the input (their
type hints give the schema, as FastMCP does), or an explicit ``input_schema`` is given
and the handler reads ``call.input``. A parameter annotated :class:`ToolCall` receives
the call (to stream progress with :meth:`ToolCall.stream`).
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, ConfigDict, ValidationError, create_model
from pydantic_core import to_jsonable_python

from rawp_adapters._errors import RawpError
from rawp_adapters._frames import ControlFrame, DelegationLink, FrameMetadata, HostTool, OutputType

if TYPE_CHECKING:
    from rawp_adapters._session import Session
    from rawp_adapters.host._policies import Policy

Handler = Callable[..., Awaitable[object]]


class ToolError(RawpError):
    """Raised by a handler: the call is answered as an error, with this message."""


class ToolHost(Protocol):
    """What a call sees of the :class:`~rawp_adapters.host.Host` serving its session
    (a Protocol, so that declaring tools does not depend on serving them)."""

    @property
    def session(self) -> Session: ...

    @property
    def tools(self) -> HostTools: ...

    @property
    def policy(self) -> Policy: ...

    @property
    def delegation_chain(self) -> tuple[DelegationLink, ...]: ...

    @property
    def allowed_tools(self) -> frozenset[str] | None: ...

    async def send(self, frame: ControlFrame) -> None:
        """Send ``frame`` unless the session has closed meanwhile."""
        ...


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """A handler's result when plain return values do not say enough: its
    ``output_type``, an error result, or ``metadata`` for the result frame."""

    output: Any = None
    output_type: OutputType = "text"
    is_error: bool = False
    metadata: FrameMetadata | None = None


class ToolCall:
    """One call of a host tool, as its handler sees it."""

    def __init__(
        self,
        host: ToolHost,
        *,
        invocation_id: str,
        tool_name: str,
        input: Mapping[str, Any],
        turn_id: str | None,
    ) -> None:
        self.host = host
        """The host serving the session (its policy, tools and delegation chain)."""
        self.invocation_id = invocation_id
        self.tool_name = tool_name
        self.input = input
        """The input as the agent sent it (already checked against the tool's schema)."""
        self.turn_id = turn_id

    @property
    def session(self) -> Session:
        return self.host.session

    async def stream(self, output: str, *, metadata: FrameMetadata | None = None) -> None:
        """Stream progress to the agent (``control.tool.stream``); ``metadata`` is put
        on the ``tool.invoke.stream`` frame the Master sees."""
        control = self.session.control
        await self.host.send(control.tool_stream(self.invocation_id, output, metadata=metadata))


class Tool(Protocol):
    """A host tool: what is published, and how a call is run."""

    @property
    def spec(self) -> HostTool: ...

    async def run(self, call: ToolCall) -> object:
        """The result: ``str`` (text), a :class:`ToolOutput`, ``None`` (empty) or any
        JSON value or pydantic model (structured). Raise for an error result."""
        ...


class FunctionTool:
    """A tool run by a function (made by :meth:`HostTools.tool`)."""

    def __init__(
        self,
        handler: Handler,
        *,
        name: str | None = None,
        description: str | None = None,
        input_schema: Mapping[str, Any] | None = None,
    ) -> None:
        self.handler = handler
        self._model: type[BaseModel] | None = None
        self._call_parameter: str | None = None
        if input_schema is None:
            self._model, self._call_parameter = _input_model(handler)
            schema = self._model.model_json_schema()
        else:
            schema = dict(input_schema)
        self.spec = HostTool(
            name=name or handler.__name__,
            description=description or inspect.getdoc(handler) or "",
            input_schema=schema,
        )

    async def run(self, call: ToolCall) -> object:
        if self._model is None:
            return await self.handler(call)
        try:
            parsed = self._model.model_validate(call.input)
        except ValidationError as exc:
            raise ToolError(f"invalid input for {self.spec.name!r}: {exc}") from exc
        arguments = {name: getattr(parsed, name) for name in type(parsed).model_fields}
        if self._call_parameter is not None:
            arguments[self._call_parameter] = call
        return await self.handler(**arguments)


def _input_model(handler: Handler) -> tuple[type[BaseModel], str | None]:
    """A model of the handler's parameters (all but the one annotated ToolCall)."""
    hints = typing.get_type_hints(handler, include_extras=True)
    fields: dict[str, Any] = {}
    call_parameter = None
    for parameter in inspect.signature(handler).parameters.values():
        annotation = hints.get(parameter.name, Any)
        if annotation is ToolCall:
            call_parameter = parameter.name
            continue
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise TypeError(f"{handler.__name__}: *args/**kwargs cannot describe a tool's input")
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[parameter.name] = (annotation, default)
    model = create_model(
        f"{handler.__name__}_input",
        __config__=ConfigDict(extra="forbid"),
        **fields,
    )
    return model, call_parameter


class HostTools:
    """The tools a Master publishes, by name; declare them with :meth:`tool` or
    :meth:`add` (a :class:`~rawp_adapters.host.Delegation` is one). One set of tools
    may serve many sessions."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.add(tool)

    def tool(
        self,
        name: str | None = None,
        *,
        description: str | None = None,
        input_schema: Mapping[str, Any] | None = None,
    ) -> Callable[[Handler], Handler]:
        """Declare the decorated async function as a tool (named after it, described by
        its docstring, unless ``name``/``description`` say otherwise)."""

        def declare(handler: Handler) -> Handler:
            self.add(
                FunctionTool(handler, name=name, description=description, input_schema=input_schema)
            )
            return handler

        return declare

    def add(self, tool: Tool) -> None:
        name = tool.spec.name
        if name in self._tools:
            raise ValueError(f"a host tool named {name!r} is declared already")
        self._tools[name] = tool

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    @property
    def specs(self) -> list[HostTool]:
        """What ``tool.catalog.publish`` carries."""
        return [tool.spec for tool in self._tools.values()]

    def only(self, names: Iterable[str]) -> HostTools:
        """The tools among ``names``."""
        keep = set(names)
        return HostTools(tool for name, tool in self._tools.items() if name in keep)

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)


def tool_output(value: object) -> ToolOutput:
    """What a handler's return value means as a result."""
    if isinstance(value, ToolOutput):
        return value
    if value is None:
        return ToolOutput(output_type="empty")
    if isinstance(value, str):
        return ToolOutput(value)
    if isinstance(value, BaseModel):
        return ToolOutput(value.model_dump(mode="json"), "structured")
    return ToolOutput(to_jsonable_python(value), "structured")
