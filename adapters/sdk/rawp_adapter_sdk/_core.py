"""The agent-core contract: what an in-process agent library implements to run behind
the SDK adapter, and how cores are found by name.

A core runs one prompt at a time and streams the events of :mod:`rawp_adapter_sdk.events`
(text and thinking, tool calls, usage, the stop reason). Before a tool runs it awaits
the :data:`PermissionCallback` it was given, which answers :class:`Allow` (optionally
with edited input) or :class:`Deny` (with a message for the model). A core never
sees DPS frames, ids or the session: the adapter turns its events into frames.

A core that can compact its conversation on request implements
:class:`CompactingCore` as well, one with a plan mode :class:`ModeSwitchingCore`; the
adapter reports ``context_compaction`` and ``plan_mode`` from that. The Master's own
tools (:class:`HostToolCore`), messages into a running prompt (:class:`SteeringCore`)
and live model changes (:class:`ModelCore`) are reported only when the core both
implements the protocol and sets the matching :class:`CoreFeatures` flag. A core calls
a published host tool with :attr:`CoreEnvironment.call_host_tool`, and streams its
plan (todo list) as :class:`~rawp_adapter_sdk.events.PlanChanged` (``plans``).

Cores are registered in the ``rawp_adapters.sdk_cores`` entry-point group
(``name = "package.module:Factory"``) or named by import path
(``"package.module:Factory"``). A factory is any callable that takes the core's
options as keyword arguments and returns an :class:`AgentCore`, usually the class.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from structlog.stdlib import BoundLogger

from rawp_adapter_sdk.events import CoreEvent
from rawp_adapters import (
    HostToolCall,
    HostToolOutcome,
    InvalidSettingsError,
    McpServer,
    ModelState,
    Progress,
    RawpError,
)
from rawp_adapters.frames import AgentErrorCode, Delivery, HostTool, Mode, ModelInfo
from rawp_adapters.plugins import entry_points_by_name

CORE_ENTRY_POINT_GROUP = "rawp_adapters.sdk_cores"


class CoreError(RawpError):
    """Raised by a core when the turn failed (the model API refused, the agent broke).

    The adapter reports it as ``agent.error`` before ``session.turn.end`` ``error``.
    """

    def __init__(
        self, message: str, *, code: str = AgentErrorCode.AGENT_ERROR, fatal: bool = False
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.fatal = fatal


# ------------------------------------------------------------------ permissions


@dataclass(frozen=True, slots=True)
class PermissionRequest:
    """A tool call waiting for permission."""

    tool_name: str
    tool_input: Mapping[str, Any]
    tool_call_id: str | None = None
    title: str | None = None
    """A one-line question for a human, when the core has one."""
    description: str | None = None


@dataclass(frozen=True, slots=True)
class Allow:
    """Run the tool, with ``updated_input`` instead of the original input when given."""

    updated_input: Mapping[str, Any] | None = None


DenyReason = Literal["refused", "timeout", "aborted", "closed", "malformed", "failed"]


@dataclass(frozen=True, slots=True)
class Deny:
    """Do not run the tool; ``message`` is what the model is told."""

    message: str
    reason: DenyReason = "refused"

    @property
    def stops_turn(self) -> bool:
        """The turn is being aborted or the session closed: the core should stop, not
        let the model carry on."""
        return self.reason in ("aborted", "closed")


PermissionDecision = Allow | Deny
PermissionCallback = Callable[[PermissionRequest], Awaitable[PermissionDecision]]
"""Awaited by a core before a tool runs. Never raises; may be awaited concurrently
for parallel tool calls. Cancelling it (e.g. on interrupt) is allowed."""


# ------------------------------------------------------------------ the core


@dataclass(frozen=True, slots=True)
class CoreFeatures:
    """What a core can really do; reported in ``session.capabilities``."""

    thinking: bool = False
    tool_events: bool = False
    permission_requests: bool = False
    abort: bool = False
    host_tools: bool = False
    """Calls the Master's tools (a :class:`HostToolCore`)."""
    steering: bool = False
    """Takes ``steer`` messages into a running prompt (a :class:`SteeringCore`)."""
    follow_up: bool = False
    """Takes ``follow_up`` messages for when a prompt would stop (a :class:`SteeringCore`)."""
    model_change: bool = False
    """Changes its model between prompts (a :class:`ModelCore`)."""
    thinking_change: bool = False
    """Changes its thinking level between prompts (a :class:`ModelCore`)."""
    model_list: bool = False
    """Lists its models (a :class:`ModelCore`)."""
    plans: bool = False
    """Streams its plan as :class:`~rawp_adapter_sdk.events.PlanChanged`."""


HostToolCaller = Callable[[HostToolCall, Progress | None], Awaitable[HostToolOutcome]]
"""Has the Master run one of its published tools (``call.turn_id`` is filled in by the
adapter). Use the core's own id for the call as ``invocation_id``, and
``permission=True`` to ask the Master's permission first. Never raises for the
Master's silence, an abort or the session's end: those come back as error outcomes."""


async def _no_host(call: HostToolCall, on_progress: Progress | None) -> HostToolOutcome:
    del on_progress
    return HostToolOutcome(
        output=f"{call.tool_name!r} is not a published host tool",
        is_error=True,
        resolution="unknown_tool",
    )


@dataclass(frozen=True, slots=True)
class CoreEnvironment:
    """What a core gets when it starts."""

    workspace: Path
    """Absolute; the agent's working directory."""
    session_id: str
    log: BoundLogger = field(repr=False)
    call_host_tool: HostToolCaller = field(default=_no_host, repr=False)
    """Calls a tool the Master published (see :class:`HostToolCore`)."""
    mcp_servers: Sequence[McpServer] = ()
    """The session's MCP servers, for a :class:`McpCore` to connect its agent to."""


@runtime_checkable
class AgentCore(Protocol):
    """An in-process agent library behind the SDK adapter.

    The adapter calls :meth:`start` once, then :meth:`run` once per prompt (never two
    at a time), :meth:`cancel` to abort the running prompt, and :meth:`close` once.
    """

    @property
    def name(self) -> str: ...

    @property
    def version(self) -> str | None: ...

    @property
    def features(self) -> CoreFeatures: ...

    async def start(self, env: CoreEnvironment) -> None:
        """Get ready; raise :class:`CoreError` (or anything) if the core cannot run."""

    def run(self, prompt: str, permission: PermissionCallback) -> AsyncIterator[CoreEvent]:
        """Run one prompt and stream what happens, ending with :class:`Stopped`."""

    async def cancel(self) -> None:
        """Ask the running prompt to stop; :meth:`run` should then soon end with
        ``Stopped("cancelled")``. Returns without waiting for that."""

    async def close(self) -> None:
        """Stop everything the core started. Must finish even when cancelled."""


@dataclass(frozen=True, slots=True)
class Compaction:
    """What a compaction did; reported as ``session.compacted`` (trigger ``manual``)."""

    tokens_before: int | None = None
    """The size of the context before, in tokens, when known."""
    summary: str | None = None
    """The summary that now stands for the conversation, when known."""
    compacted: bool = True
    """False: there was nothing to compact (say, an empty conversation), which is left
    as it was; the Master is told so, not that the compaction failed."""


@runtime_checkable
class CompactingCore(AgentCore, Protocol):
    """A core that compacts its conversation on request (``context_compaction``)."""

    async def compact(self, instructions: str | None) -> Compaction:
        """Replace the conversation so far by a summary, following ``instructions`` when
        given. Never called while a prompt runs; raise :class:`CoreError` if it failed."""


@runtime_checkable
class ModeSwitchingCore(AgentCore, Protocol):
    """A core with a plan mode (``plan_mode``)."""

    async def switch_mode(self, mode: Mode) -> None:
        """``plan``: the agent works out a plan and changes nothing; ``default``: back to
        normal work. May come while a prompt runs; raise :class:`CoreError` if it failed."""


@runtime_checkable
class HostToolCore(AgentCore, Protocol):
    """A core whose agent can call the Master's tools (``host_tools``)."""

    async def publish_tools(self, tools: Sequence[HostTool]) -> None:
        """Make the agent see exactly ``tools`` (replacing earlier ones); it calls them
        through :attr:`CoreEnvironment.call_host_tool`."""


@runtime_checkable
class McpCore(AgentCore, Protocol):
    """A core whose agent takes the session's MCP servers
    (:attr:`CoreEnvironment.mcp_servers`), each connected as it starts."""

    @property
    def mcp_refused(self) -> Mapping[str, str]:
        """After :meth:`start`: the servers it could not take, by name, with why (the
        session goes on with the others)."""


@runtime_checkable
class SteeringCore(AgentCore, Protocol):
    """A core that takes messages while a prompt runs (``steering`` / ``follow_up``)."""

    async def steer(self, text: str, delivery: Delivery) -> None:
        """Pass ``text`` into the running prompt (``steer``) or keep it for when the
        prompt would stop and go on with it (``follow_up``). Only called while
        :meth:`AgentCore.run` runs, and only for deliveries the features name."""


@runtime_checkable
class ModelCore(AgentCore, Protocol):
    """A core whose model can change between prompts (``model_change``)."""

    @property
    def model_state(self) -> ModelState:
        """The model (and thinking level) in use now, as far as known."""

    async def set_model(self, model: str | None, thinking_level: str | None) -> ModelState:
        """Change what is given (``thinking_level`` only with ``thinking_change``);
        return what is now in use. Raise :class:`~rawp_adapters.OperationRejected` for a
        model the agent does not have, :class:`CoreError` if the change failed."""

    async def list_models(self) -> list[ModelInfo]:
        """The models :meth:`set_model` takes (only called with ``model_list``)."""


CoreFactory = Callable[..., AgentCore]


# ------------------------------------------------------------------ registry


@dataclass(frozen=True, slots=True)
class InstalledCore:
    name: str
    distribution: str | None
    target: str


def _core_entry_points() -> dict[str, EntryPoint]:
    return entry_points_by_name(CORE_ENTRY_POINT_GROUP)


def installed_cores() -> list[InstalledCore]:
    """Cores registered in the ``rawp_adapters.sdk_cores`` entry-point group."""
    return [
        InstalledCore(
            name=name, distribution=ep.dist.name if ep.dist is not None else None, target=ep.value
        )
        for name, ep in sorted(_core_entry_points().items())
    ]


def require_installed_core(core: str) -> None:
    """Raise :class:`InvalidSettingsError` unless ``core`` names an installed core: for
    hosts that take settings from outside and so must not import code a setting names."""
    if core in _core_entry_points():
        return
    names = ", ".join(c.name for c in installed_cores()) or "none"
    raise InvalidSettingsError(
        f"SDK agent core {core!r} is not an installed core (installed cores: {names}); "
        "this host does not import code named in settings. Allow import paths with "
        "--allow-import-path (rawp-adapters serve/run) or AgentMetadata(allow_import_paths=True)"
    )


def load_core_factory(core: str) -> CoreFactory:
    """The factory of a core named by entry point (``"demo"``) or import path
    (``"package.module:Factory"``). Raises :class:`InvalidSettingsError`."""
    if ":" in core:  # an import path loads like an entry point's value
        found: EntryPoint | None = EntryPoint(name=core, value=core, group=CORE_ENTRY_POINT_GROUP)
    else:
        found = _core_entry_points().get(core)
    if found is None:
        names = ", ".join(c.name for c in installed_cores()) or "none"
        raise InvalidSettingsError(
            f"no SDK agent core {core!r} is installed (installed: {names}); "
            "name one of them or give an import path 'package.module:Factory'"
        )
    try:
        factory: object = found.load()
    except Exception as exc:
        raise InvalidSettingsError(
            f"SDK agent core {core!r} ({found.value}) failed to load: {exc}"
        ) from exc
    if not callable(factory):
        raise InvalidSettingsError(f"SDK agent core {core!r} ({found.value}) is not callable")
    return factory


def create_core(core: str, options: Mapping[str, Any] | None = None) -> AgentCore:
    """A new core from its name or import path, built with ``options`` as keywords."""
    factory = load_core_factory(core)
    try:
        instance = factory(**dict(options or {}))
    except (TypeError, ValueError) as exc:
        raise InvalidSettingsError(f"invalid options for SDK agent core {core!r}: {exc}") from exc
    if not isinstance(instance, AgentCore):
        raise InvalidSettingsError(f"SDK agent core {core!r} did not build an AgentCore")
    return instance
