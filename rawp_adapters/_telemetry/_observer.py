"""A session's frames as GenAI spans and metrics: every frame the session emits goes
through the sinks of :meth:`SessionTelemetry.sinks`, in ``seq`` order, and each prompt
through :meth:`SessionTelemetry.prompt`; nothing else. No I/O, no tasks: frames in, span and
metric calls out.

The span tree (specs/telemetry.md): ``create_agent {agent}`` from the session's open
to its capabilities; per turn ``invoke_agent {agent}`` (a child of the Master's
context when it sent the prompt, linked to ``create_agent``), under it one
``execute_tool {tool}`` per tool call and one ``await_permission {tool}`` (or
``await_answer {TYPE}``) per question, under the tool call it is about when that is
open.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from opentelemetry import context as otel_context
from opentelemetry import metrics, trace
from opentelemetry.context import Context
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.metrics._internal import _ProxyMeterProvider
from opentelemetry.trace import Link, NoOpTracerProvider, Span, SpanKind, StatusCode, Tracer
from opentelemetry.util.types import AttributeValue

from rawp_adapters._frames import (
    AgentErrorFrame,
    ClientFrame,
    FrameMetadata,
    InteractionRequestFrame,
    InteractionResolvedFrame,
    ModelChangedFrame,
    PromptRequestFrame,
    SessionCapabilitiesFrame,
    SessionClosedFrame,
    SessionUsageFrame,
    TextDoneFrame,
    TokenUsage,
    ToolInvokeRequestFrame,
    ToolInvokeResultFrame,
    TurnEndFrame,
    TurnStartFrame,
)
from rawp_adapters._telemetry._instruments import (
    SCHEMA_URL,
    Instruments,
    instruments,
    library_version,
)
from rawp_adapters._telemetry._propagation import extracted

CAPTURE_CONTENT_ENV: Final = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""``true``: prompts, answers, tool arguments and results are recorded on spans."""
PROCESS_ADAPTER: Final = "process"
"""Its agent is another process: its turns are CLIENT spans (in-process cores' INTERNAL)."""
_TOKEN_TYPES: Final = (("input", "input_tokens"), ("output", "output_tokens"))
_USAGE_ATTRIBUTES: Final = (
    ("gen_ai.usage.input_tokens", "input_tokens"),
    ("gen_ai.usage.output_tokens", "output_tokens"),
    ("gen_ai.usage.cache_read.input_tokens", "cache_read_tokens"),
    ("gen_ai.usage.cache_creation.input_tokens", "cache_write_tokens"),
)


@dataclass(slots=True)
class _Open:
    """A span not ended yet: a turn, a tool call, a question or the agent's start."""

    span: Span
    started: float
    """``time.monotonic()`` at its start, for the duration metrics."""
    turn_id: str | None = None
    """The turn it is or belongs to."""
    tool_name: str | None = None
    error_type: str | None = None
    """The code of the last ``agent.error`` while it was open (turns, the start)."""
    usage: TokenUsage | None = None
    texts: list[str] = field(default_factory=list)
    """A turn's answer, its text blocks: kept only when content is recorded."""


class SessionTelemetry:
    """Spans and metrics of one session, derived from its frames."""

    def __init__(
        self,
        tracer: Tracer,
        meters: Instruments,
        *,
        session_id: str,
        adapter_type: str,
        capture_content: bool = False,
        parent: Context | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._tracer = tracer
        self._meters = meters
        self._session_id = session_id
        self._agent = adapter_type
        self._agent_version: str | None = None
        self._model: str | None = None
        self._kind = SpanKind.CLIENT if adapter_type == PROCESS_ADAPTER else SpanKind.INTERNAL
        self._capture = capture_content
        self._clock = clock
        self._parent = parent if parent is not None else otel_context.get_current()
        """The Master's context when it opened the session: the parent of what has no
        prompt of its own to follow."""
        self._start: _Open | None = self._open(
            "create_agent",
            SpanKind.INTERNAL,
            self._parent,
            {"gen_ai.operation.name": "create_agent", "gen_ai.conversation.id": session_id},
        )
        self._start_context = self._start.span.get_span_context()
        self._prompt: tuple[str, Context, str] | None = None
        """The last prompt sent (id, parent, text): its turn starts while it is sent."""
        self._turns: dict[str, _Open] = {}
        self._tools: dict[str, _Open] = {}
        self._questions: dict[str, _Open] = {}
        self._closed = False
        meters.sessions_open.add(1)
        self._observers: Final[dict[str, Callable[[Any], None]]] = {
            "session.capabilities": self._capabilities,
            "session.turn.start": self._turn_start,
            "session.turn.end": self._turn_end,
            "session.usage": self._usage,
            "session.model.changed": self._model_changed,
            "agent.error": self._agent_error,
            "agent.text.done": self._text_done,
            "tool.invoke.request": self._tool_request,
            "tool.invoke.result": self._tool_result,
            "agent.interaction.request": self._question,
            "agent.interaction.resolved": self._answer,
            "session.closed": self._session_closed,
        }

    # ------------------------------------------------------------ inputs

    def sinks(
        self, put: Callable[[ClientFrame], None], put_many: Callable[[list[ClientFrame]], None]
    ) -> tuple[Callable[[ClientFrame], None], Callable[[list[ClientFrame]], None]]:
        """``put`` and ``put_many`` of the session's queue, each frame observed first.
        They run for every frame: one dict lookup each, most frames (deltas) then done."""
        observers = self._observers

        def sink(frame: ClientFrame) -> None:
            observer = observers.get(frame.type)
            if observer is not None:
                observer(frame)
            put(frame)

        def sink_many(frames: list[ClientFrame]) -> None:
            for frame in frames:
                observer = observers.get(frame.type)
                if observer is not None:
                    observer(frame)
            put_many(frames)

        return sink, sink_many

    def count_frames(self, emitted: Callable[[], int]) -> None:
        """``emitted`` tells how many frames the session has emitted (``rawp.frames``)."""
        self._meters.frames.live[self] = (self._agent, emitted)

    def prompt(self, frame: PromptRequestFrame) -> None:
        """A prompt the Master sent: its turn is a child of the ``traceparent`` in its
        metadata, else of the context current as it is sent."""
        parent = extracted(_extra(frame.metadata))
        self._prompt = (frame.payload.prompt_id, parent, frame.payload.text)

    # ------------------------------------------------------------ contexts

    def start_context(self) -> Context | None:
        """The agent's start (``create_agent``) while it runs."""
        start = self._start
        return trace.set_span_in_context(start.span, self._parent) if start else None

    def turn_context(self, turn_id: str) -> Context | None:
        turn = self._turns.get(turn_id)
        return trace.set_span_in_context(turn.span) if turn is not None else None

    def tool_context(self, invocation_id: str) -> Context | None:
        """The tool call's span, for what runs it (a host tool, a sub-agent)."""
        tool = self._tools.get(invocation_id)
        return trace.set_span_in_context(tool.span) if tool is not None else None

    # ------------------------------------------------------------ frames

    def _capabilities(self, frame: SessionCapabilitiesFrame) -> None:
        agent = frame.payload.agent
        if agent is not None:
            self._agent, self._agent_version, self._model = agent.name, agent.version, agent.model
            counted = self._meters.frames.live.get(self)
            if counted is not None:
                self._meters.frames.live[self] = (agent.name, counted[1])
        start = self._start
        if start is not None:
            self._start = None
            start.span.update_name(f"create_agent {self._agent}")
            start.span.set_attributes(self._agent_attributes())
            start.span.end()

    def _turn_start(self, frame: TurnStartFrame) -> None:
        payload = frame.payload
        parent, text = self._parent, ""
        prompt = self._prompt
        if prompt is not None and prompt[0] == payload.prompt_id:
            _, parent, text = prompt
            self._prompt = None
        attributes = {
            "gen_ai.operation.name": "invoke_agent",
            **self._agent_attributes(),
            "rawp.turn.id": payload.turn_id,
            "rawp.prompt.id": payload.prompt_id,
        }
        if self._capture:
            attributes["gen_ai.input.messages"] = _messages("user", [text])
        turn = self._open(
            f"invoke_agent {self._agent}",
            self._kind,
            parent,
            attributes,
            links=[Link(self._start_context)],
        )
        turn.turn_id = payload.turn_id
        self._turns[payload.turn_id] = turn

    def _text_done(self, frame: TextDoneFrame) -> None:
        turn = self._turns.get(frame.payload.turn_id)
        if turn is not None and self._capture:
            turn.texts.append(frame.payload.text)

    def _agent_error(self, frame: AgentErrorFrame) -> None:
        payload = frame.payload
        for turn in self._turns.values():
            turn.error_type = payload.error_code
        start = self._start
        if start is not None:
            start.error_type = payload.error_code
        attributes = {
            "rawp.error.code": payload.error_code,
            "rawp.error.severity": payload.severity,
        }
        for opened in (*self._turns.values(), *((start,) if start else ())):
            opened.span.add_event("agent.error", attributes)

    def _usage(self, frame: SessionUsageFrame) -> None:
        if frame.metadata is not None and _extra(frame.metadata).get("usage_scope") == "step":
            return
        turn = self._turns.get(frame.payload.turn_id)
        if turn is not None:
            turn.usage = frame.payload

    def _model_changed(self, frame: ModelChangedFrame) -> None:
        if frame.payload.model is not None:
            self._model = frame.payload.model

    def _turn_end(self, frame: TurnEndFrame) -> None:
        payload = frame.payload
        turn = self._turns.pop(payload.turn_id, None)
        if turn is None:
            return
        turn_id = payload.turn_id
        for invocation_id in [i for i, tool in self._tools.items() if tool.turn_id == turn_id]:
            self._end_tool(invocation_id, "turn_ended")
        for interaction_id in [i for i, q in self._questions.items() if q.turn_id == turn_id]:
            self._end_question(interaction_id, None, None)
        span = turn.span
        usage = payload.usage or turn.usage
        span.set_attribute("gen_ai.response.finish_reasons", [payload.stop_reason])
        metric = self._metric_attributes("invoke_agent")
        if usage is not None:
            self._record_usage(span, usage, metric)
        if self._capture and turn.texts:
            span.set_attribute("gen_ai.output.messages", _messages("assistant", turn.texts))
        if payload.stop_reason == "error":
            error_type = turn.error_type or "error"
            span.set_status(StatusCode.ERROR)
            span.set_attribute("error.type", error_type)
            metric["error.type"] = error_type
        self._meters.operation_duration.record(self._clock() - turn.started, metric)
        span.end()

    def _tool_request(self, frame: ToolInvokeRequestFrame) -> None:
        payload = frame.payload
        turn = self._turn_of(payload.turn_id)
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": payload.tool_name,
            "gen_ai.tool.call.id": payload.invocation_id,
            "gen_ai.tool.type": "function",
            "gen_ai.conversation.id": self._session_id,
            "rawp.tool.executor": payload.executor or "agent",
        }
        if self._capture:
            attributes["gen_ai.tool.call.arguments"] = _json(payload.input)
        parent = trace.set_span_in_context(turn.span) if turn is not None else self._parent
        tool = self._open(
            f"execute_tool {payload.tool_name}", SpanKind.INTERNAL, parent, attributes
        )
        tool.turn_id = turn.turn_id if turn is not None else None
        tool.tool_name = payload.tool_name
        self._tools[payload.invocation_id] = tool

    def _tool_result(self, frame: ToolInvokeResultFrame) -> None:
        payload = frame.payload
        tool = self._tools.get(payload.invocation_id)
        if tool is None:
            return
        if self._capture:
            tool.span.set_attribute("gen_ai.tool.call.result", _json(payload.output))
        if payload.resolution is not None:
            tool.span.set_attribute("rawp.tool.resolution", payload.resolution)
        error_type = None
        if payload.is_error:
            resolution = payload.resolution
            error_type = resolution if resolution not in (None, "answered") else "tool_error"
        self._end_tool(payload.invocation_id, error_type)

    def _question(self, frame: InteractionRequestFrame) -> None:
        payload = frame.payload
        tool_name = payload.context.tool_name
        permission = payload.interaction_type == "PERMISSION"
        name = (
            f"await_permission {tool_name}"
            if permission
            else f"await_answer {payload.interaction_type}"
        )
        attributes: dict[str, AttributeValue] = {
            "rawp.interaction.type": payload.interaction_type,
            "rawp.interaction.id": payload.interaction_id,
            "gen_ai.conversation.id": self._session_id,
        }
        if tool_name is not None:
            attributes["gen_ai.tool.name"] = tool_name
        call_id = payload.context.tool_call_id
        if call_id is not None:
            attributes["gen_ai.tool.call.id"] = call_id
        over = self._tools.get(call_id) if call_id is not None else None
        if over is None:
            over = self._turn_of(payload.turn_id)
        parent = trace.set_span_in_context(over.span) if over is not None else self._parent
        question = self._open(name, SpanKind.INTERNAL, parent, attributes)
        question.turn_id = over.turn_id if over is not None else None
        self._questions[payload.interaction_id] = question

    def _answer(self, frame: InteractionResolvedFrame) -> None:
        payload = frame.payload
        self._end_question(payload.interaction_id, payload.outcome, payload.decided_by)

    def _session_closed(self, frame: SessionClosedFrame) -> None:
        if self._closed:
            return
        self._closed = True
        for interaction_id in list(self._questions):
            self._end_question(interaction_id, None, None)
        for invocation_id in list(self._tools):
            self._end_tool(invocation_id, "session_closed")
        for turn in self._turns.values():
            turn.span.set_attribute("error.type", "session_closed")
            turn.span.set_status(StatusCode.ERROR)
            turn.span.end()
        self._turns.clear()
        start = self._start
        if start is not None:  # the agent never started
            self._start = None
            start.span.set_attribute("error.type", start.error_type or frame.payload.reason)
            start.span.set_status(StatusCode.ERROR)
            start.span.end()
        self._meters.sessions_open.add(-1)
        self._meters.frames.end(self)

    # ------------------------------------------------------------ helpers

    def _open(
        self,
        name: str,
        kind: SpanKind,
        parent: Context,
        attributes: dict[str, AttributeValue],
        links: list[Link] | None = None,
    ) -> _Open:
        span = self._tracer.start_span(
            name, context=parent, kind=kind, attributes=attributes, links=links
        )
        return _Open(span, self._clock())

    def _turn_of(self, turn_id: str | None) -> _Open | None:
        if turn_id is not None:
            return self._turns.get(turn_id)
        return next(iter(self._turns.values()), None)

    def _agent_attributes(self) -> dict[str, AttributeValue]:
        attributes: dict[str, AttributeValue] = {
            "gen_ai.agent.name": self._agent,
            "gen_ai.conversation.id": self._session_id,
        }
        if self._agent_version is not None:
            attributes["gen_ai.agent.version"] = self._agent_version
        if self._model is not None:
            attributes["gen_ai.request.model"] = self._model
        return attributes

    def _metric_attributes(self, operation: str) -> dict[str, AttributeValue]:
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": operation,
            "gen_ai.agent.name": self._agent,
        }
        if self._model is not None:
            attributes["gen_ai.request.model"] = self._model
        return attributes

    def _record_usage(
        self, span: Span, usage: TokenUsage, metric: dict[str, AttributeValue]
    ) -> None:
        for attribute, name in _USAGE_ATTRIBUTES:
            count = getattr(usage, name)
            if count is not None:
                span.set_attribute(attribute, count)
        if usage.cost_usd is not None:
            span.set_attribute("rawp.usage.cost_usd", usage.cost_usd)
        for token_type, name in _TOKEN_TYPES:
            count = getattr(usage, name)
            if count is not None:
                self._meters.token_usage.record(count, {**metric, "gen_ai.token.type": token_type})

    def _end_tool(self, invocation_id: str, error_type: str | None) -> None:
        tool = self._tools.pop(invocation_id)
        metric = self._metric_attributes("execute_tool")
        if tool.tool_name is not None:
            metric["gen_ai.tool.name"] = tool.tool_name
        if error_type is not None:
            tool.span.set_attribute("error.type", error_type)
            tool.span.set_status(StatusCode.ERROR)
            metric["error.type"] = error_type
        self._meters.operation_duration.record(self._clock() - tool.started, metric)
        tool.span.end()

    def _end_question(self, interaction_id: str, outcome: str | None, by: str | None) -> None:
        question = self._questions.pop(interaction_id)
        metric: dict[str, AttributeValue] = {"rawp.interaction.outcome": outcome or "unresolved"}
        if outcome is not None and by is not None:
            question.span.set_attributes(
                {"rawp.interaction.outcome": outcome, "rawp.interaction.decided_by": by}
            )
            metric["rawp.interaction.decided_by"] = by
        self._meters.interaction_wait.record(self._clock() - question.started, metric)
        question.span.end()


def _extra(metadata: FrameMetadata | None) -> dict[str, Any]:
    return metadata.model_extra or {} if metadata is not None else {}


def _json(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _messages(role: str, texts: list[str]) -> str:
    parts = [{"type": "text", "content": text} for text in texts]
    return json.dumps([{"role": role, "parts": parts}], ensure_ascii=False)


def new_session_telemetry(session_id: str, adapter_type: str) -> SessionTelemetry | None:
    """Telemetry for a new session, if a tracer or meter provider is configured."""
    tracer_provider = trace.get_tracer_provider()
    meter_provider = metrics.get_meter_provider()
    if _unset(tracer_provider, trace.ProxyTracerProvider, NoOpTracerProvider) and _unset(
        meter_provider, _ProxyMeterProvider, NoOpMeterProvider
    ):
        return None
    tracer = tracer_provider.get_tracer("rawp_adapters", library_version(), schema_url=SCHEMA_URL)
    capture = os.environ.get(CAPTURE_CONTENT_ENV, "").strip().lower() == "true"
    return SessionTelemetry(
        tracer,
        instruments(),
        session_id=session_id,
        adapter_type=adapter_type,
        capture_content=capture,
    )


def _unset(provider: object, *placeholders: type) -> bool:
    return isinstance(provider, placeholders)
