"""The adapter contract: what an agent adapter implements and what it is given.

An adapter is the I/O edge to one agent. The session runtime (``open_session``)
wraps it and owns everything the protocol requires of every adapter: the
session id, ``seq`` and timestamps, ``session.capabilities`` first, the
one-prompt-in-flight guard, exactly one ``session.turn.end`` per turn, the
interaction broker and ``session.closed`` last. An adapter only:

- starts and stops its agent (:meth:`Adapter.start`, :meth:`Adapter.close`);
- runs one prompt to its end (:meth:`Adapter.prompt`), emitting payloads through
  :meth:`SessionContext.emit` as the agent produces them;
- asks the Master for decisions with :meth:`SessionContext.interact`;
- reports that its agent went away with :meth:`SessionContext.agent_exited`;
- passes the agent's calls of the Master's own tools to
  :meth:`SessionContext.call_host_tool`.

Optional operations (host tools, steering, model changes, plans, compaction, plan
mode) raise :class:`UnsupportedOperation` unless an adapter overrides them and says
so in its :class:`Features`.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, Protocol, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from typing_extensions import TypeVar

from rawp_adapters._errors import InvalidSettingsError, UnsupportedOperation
from rawp_adapters._frames import (
    AgentError,
    AgentInfo,
    ClientPayload,
    Decision,
    Features,
    HostCallResolution,
    HostTool,
    InteractionContext,
    InteractionType,
    Mode,
    ModelInfo,
    ModelSet,
    OutputType,
    PlanEntry,
    PromptRequest,
    PromptSteer,
    StopReason,
    TokenUsage,
)

if TYPE_CHECKING:
    from structlog.stdlib import BoundLogger


@dataclass(frozen=True, slots=True)
class Turn:
    """One prompt being run. Every payload about it carries ``turn_id``."""

    turn_id: str
    request: PromptRequest

    @property
    def text(self) -> str:
        return self.request.text


@dataclass(frozen=True, slots=True)
class TurnResult:
    """How a turn ended, returned by :meth:`Adapter.prompt`."""

    stop_reason: StopReason = "end_turn"
    usage: TokenUsage | None = None


@dataclass(frozen=True, slots=True)
class AgentExit:
    """The agent went away on its own (crash, signal, clean exit).

    ``error`` is emitted before the open turn's end (if any) and ``session.closed``.
    """

    exit_code: int | None = None
    signal: str | None = None
    error: AgentError | None = None


@dataclass(frozen=True, slots=True)
class CloseResult:
    """What :meth:`Adapter.close` saw of its agent's end."""

    exit_code: int | None = None
    signal: str | None = None


OutcomeReason = Literal[
    "answered", "timeout", "aborted", "closed", "malformed", "cancelled", "overloaded"
]


@dataclass(frozen=True, slots=True)
class InteractionOutcome:
    """The Master's decision. ``allowed`` is true only after an explicit allow."""

    decision: Decision
    reason: OutcomeReason
    value: str | None = None

    @property
    def allowed(self) -> bool:
        return self.decision == "allow"


@dataclass(frozen=True, slots=True)
class Question:
    """What an adapter asks the Master: one ``agent.interaction.request``.

    A PERMISSION question names the tool in ``context.tool_name`` (§17.3.1).
    ``timeout_ms`` None takes the session's default deadline.
    """

    interaction_type: InteractionType
    turn_id: str | None = None
    title: str | None = None
    message: str | None = None
    options: tuple[str, ...] | None = None
    context: InteractionContext | None = None
    timeout_ms: int | None = None

    @classmethod
    def permission(
        cls,
        tool_name: str,
        *,
        tool_input: Mapping[str, Any] | None = None,
        tool_call_id: str | None = None,
        turn_id: str | None = None,
        title: str | None = None,
        message: str | None = None,
        timeout_ms: int | None = None,
    ) -> Question:
        """May the agent run ``tool_name`` (with ``tool_input``)?"""
        context = InteractionContext(
            tool_name=tool_name,
            tool_input=dict(tool_input) if tool_input is not None else None,
            tool_call_id=tool_call_id,
        )
        return cls(
            "PERMISSION",
            turn_id=turn_id,
            title=title,
            message=message,
            context=context,
            timeout_ms=timeout_ms,
        )


HOST_TOOL_TIMEOUT_MS = 300_000
"""How long the Master may take to answer a host tool call unless the session says
otherwise (``SessionOptions.host_tool_timeout_ms``, ``serve --host-tool-timeout-ms``)."""


@dataclass(frozen=True, slots=True)
class HostToolCall:
    """The agent calls a tool the Master published (:meth:`SessionContext.call_host_tool`).

    ``invocation_id`` is the agent's own id for the call where it has one, so that the
    agent's own reports of the call are recognised as this call. ``permission`` asks
    the Master a PERMISSION question first (the adapter's permission gate).
    """

    invocation_id: str
    tool_name: str
    input: Mapping[str, Any]
    turn_id: str | None = None
    permission: bool = False


@dataclass(frozen=True, slots=True)
class HostToolOutcome:
    """What the agent is told of a host tool call. Anything but ``answered`` is an error."""

    output: Any = None
    output_type: OutputType = "text"
    is_error: bool = False
    resolution: HostCallResolution = "answered"

    @property
    def text(self) -> str:
        """The output as text for an agent that takes text (JSON for other values)."""
        if self.output is None:
            return ""
        if isinstance(self.output, str):
            return self.output
        return json.dumps(self.output, ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class ModelState:
    """The model and thinking level an agent confirms after a change."""

    model: str | None = None
    thinking_level: str | None = None


Progress = Callable[[str], Awaitable[None]]
"""Called with each piece of a host tool's streamed output, for the agent."""


class SessionContext(Protocol):
    """What the session runtime gives an adapter."""

    @property
    def session_id(self) -> str: ...

    @property
    def workspace(self) -> Path: ...

    @property
    def log(self) -> BoundLogger: ...

    @property
    def interaction_timeout_ms(self) -> int:
        """The deadline of a :class:`Question` that names none
        (``SessionOptions.interaction_timeout_ms``, which the Master's host sets)."""

    async def emit(self, payload: ClientPayload) -> None:
        """Send one payload to the Master, in order. Waits while the host is far behind."""

    async def emit_many(self, payloads: Iterable[ClientPayload]) -> None:
        """:meth:`emit` each payload, in order, waiting (if at all) once after the last:
        for what an agent produced at one moment (e.g. one read of its output)."""

    async def interact(self, question: Question) -> InteractionOutcome:
        """Ask the Master and wait. Never raises for timeout, abort or close: those deny."""

    async def call_host_tool(
        self, call: HostToolCall, on_progress: Progress | None = None
    ) -> HostToolOutcome:
        """Have the Master run one of its published tools and wait for its result.

        The runtime checks the tool is published and the input against its schema
        before the Master sees the call, asks permission first when ``call.permission``,
        passes streamed output to ``on_progress``, and ends the call with an error
        outcome on its deadline, an abort or the session's end. Never raises for those.
        """

    def agent_exited(self, exit: AgentExit) -> None:
        """The agent is gone: end the open turn, deny interactions, close the session."""

    def start_soon(
        self, func: Callable[[], Coroutine[Any, Any, object]], *, name: str | None = None
    ) -> None:
        """Run ``func`` in the background for the session's lifetime (e.g. a pipe reader).

        It is cancelled after :meth:`Adapter.close` has returned; it must not raise.
        """


class AdapterSettings(BaseModel):
    """Base for an adapter's own settings (``AgentMetadata.settings``)."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)


class AgentMetadata(BaseModel):
    """What an orchestrator hands in to run an agent (RAWP 1.0.2 §4.3, as far as known).

    Unknown keys of the orchestrator's agent metadata are ignored; the adapter's own
    configuration goes in ``settings`` and is validated by the adapter.
    """

    model_config = ConfigDict(defer_build=True, frozen=True, extra="ignore")

    adapter_type: str = Field(description="Which installed adapter runs the agent.")
    single_turn_process: bool = Field(
        default=False, description="Start the agent once per prompt (§18)."
    )
    settings: dict[str, Any] = Field(
        default_factory=dict, description="The adapter's own settings."
    )
    allow_import_paths: bool = Field(
        default=True,
        description="Settings may name code to import (`module:attr`). Hosts that take "
        "settings from outside (the CLI) set it False unless told otherwise.",
    )


SettingsT = TypeVar("SettingsT", bound=AdapterSettings, default=AdapterSettings, covariant=True)
"""A bare ``Adapter`` is any adapter (its settings only known as ``AdapterSettings``)."""


class Adapter(ABC, Generic[SettingsT]):
    """Base class of every adapter, generic in its settings model
    (``class MyAdapter(Adapter[MySettings])``). Subclasses set ``adapter_type`` and
    ``settings_model`` and are registered in the ``rawp_adapters.adapters`` entry-point
    group."""

    adapter_type: ClassVar[str]
    settings_model: ClassVar[type[AdapterSettings]] = AdapterSettings

    def __init__(self, settings: SettingsT) -> None:
        self.settings: SettingsT = settings

    @classmethod
    def parse_settings(cls, settings: Mapping[str, Any] | None) -> SettingsT:
        """Plain settings validated against ``settings_model``."""
        try:
            parsed = cls.settings_model.model_validate(dict(settings or {}))
        except ValidationError as exc:
            raise InvalidSettingsError(f"invalid settings for {cls.adapter_type!r}: {exc}") from exc
        return parsed  # type: ignore[return-value]  # settings_model is SettingsT's class

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any] | None = None) -> Self:
        """Build from plain settings, validated against ``settings_model``."""
        return cls(cls.parse_settings(settings))

    @classmethod
    def from_metadata(cls, metadata: AgentMetadata) -> Self:
        """Build from the orchestrator's agent metadata; the registry's one way in.

        Override to read metadata fields beyond the settings. The default refuses
        ``single_turn_process``, which only an adapter that starts processes can honour.
        """
        if metadata.single_turn_process:
            raise InvalidSettingsError(
                f"adapter {cls.adapter_type!r} does not run one agent process per prompt "
                "(single_turn_process)"
            )
        return cls.from_settings(metadata.settings)

    @property
    @abstractmethod
    def features(self) -> Features:
        """What this adapter and its agent can do, stated honestly."""

    @property
    def agent_info(self) -> AgentInfo | None:
        """The agent's name and version, when known (read after :meth:`start`)."""
        return None

    @property
    def notices(self) -> list[str]:
        """What a person starting this agent should know first, e.g. what it is given
        (``rawp-adapters run`` shows them before the session starts)."""
        return []

    @abstractmethod
    async def start(self, ctx: SessionContext) -> None:
        """Start the agent and return once it is ready. Raise ``StartFailed`` if it cannot."""

    @abstractmethod
    async def prompt(self, turn: Turn) -> TurnResult:
        """Run one turn to its end. Raise ``AgentFailure`` to end it with an error."""

    async def abort(self, turn: Turn) -> None:
        """Ask the agent to stop ``turn``; :meth:`prompt` should then return ``cancelled``.

        The default does nothing: the session cancels :meth:`prompt` after its grace.
        """
        del turn

    async def compact(self, custom_instructions: str | None) -> None:
        """Compact the context and emit ``SessionCompacted(trigger="manual")``."""
        del custom_instructions
        raise UnsupportedOperation("this agent cannot compact its context")

    async def switch_mode(self, mode: Mode) -> None:
        del mode
        raise UnsupportedOperation("this agent has no plan mode")

    async def publish_tools(self, tools: Sequence[HostTool]) -> None:
        """Make the agent see exactly ``tools`` (replacing earlier ones); its calls of
        them go to :meth:`SessionContext.call_host_tool`."""
        del tools
        raise UnsupportedOperation("this agent cannot call the Master's tools")

    async def steer(self, turn: Turn, message: PromptSteer) -> None:
        """Pass ``message`` into the running ``turn`` (``delivery: steer``) or queue it
        for when the agent would stop (``follow_up``); the turn goes on either way."""
        del turn, message
        raise UnsupportedOperation("this agent cannot take messages during a turn")

    async def set_model(self, change: ModelSet) -> ModelState:
        """Change the model and/or thinking level between turns; return what the agent
        confirms. Raise :class:`OperationRejected` for a model it does not have."""
        del change
        raise UnsupportedOperation("this agent cannot change its model")

    async def list_models(self) -> list[ModelInfo]:
        raise UnsupportedOperation("this agent cannot list its models")

    async def set_plan(self, entries: Sequence[PlanEntry]) -> list[PlanEntry]:
        """Replace the agent's plan; return the plan as the agent now has it."""
        del entries
        raise UnsupportedOperation("this agent has no plan to seed")

    @abstractmethod
    async def close(self) -> CloseResult:
        """Stop the agent and everything it started; must finish even when cancelled."""
