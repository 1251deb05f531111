"""Trace context beyond the session's own spans: the agent process's environment and
the library's log records."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import anyio
import pytest
from opentelemetry import trace
from opentelemetry.trace import SpanKind

from rawp_adapters import SessionContext, Turn, TurnResult, open_session
from rawp_adapters.frames import TurnEndFrame
from rawp_adapters.processes import (
    AgentProcessSettings,
    HostEnvironment,
    agent_environment,
    host_environment,
)
from rawp_adapters.testing import FunctionAdapter, drive
from tests.host.serving import WAIT
from tests.process.helpers import fake_adapter
from tests.telemetry.recorded import Recorded

PARENT = {
    "PATH": "/bin",
    "OTEL_SERVICE_NAME": "master",
    "OTEL_EXPORTER_OTLP_HEADERS": "authorization=secret",
}


def environment(settings: AgentProcessSettings) -> dict[str, str]:
    return agent_environment(settings, session_id="sid", workspace=Path("/srv"), parent=PARENT)


def test_an_agent_started_in_a_span_gets_its_traceparent_and_the_otel_settings(
    recorded: Recorded,
) -> None:
    allowlist = AgentProcessSettings(env_policy="allowlist")
    assert "TRACEPARENT" not in environment(allowlist), "no span, no TRACEPARENT"
    with trace.get_tracer("tests").start_as_current_span("start") as span:
        env = environment(allowlist)
    context = span.get_span_context()
    assert (
        env["TRACEPARENT"]
        == f"00-{context.trace_id:032x}-{context.span_id:016x}-{context.trace_flags:02x}"
    )
    assert env["OTEL_SERVICE_NAME"] == "master"
    assert "OTEL_EXPORTER_OTLP_HEADERS" not in env, "exporter headers may hold credentials"


def test_a_withheld_otel_setting_is_not_passed_on(recorded: Recorded) -> None:
    withheld = HostEnvironment(withheld_prefixes=("OTEL_SERVICE",))
    with trace.get_tracer("tests").start_as_current_span("start"), host_environment(withheld):
        env = environment(AgentProcessSettings(env_policy="allowlist"))
    assert "OTEL_SERVICE_NAME" not in env
    assert "TRACEPARENT" in env


@pytest.mark.anyio
async def test_a_process_agent_runs_under_its_create_agent_span_and_its_turns_are_client_spans(
    tmp_path: Path, recorded: Recorded, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in PARENT.items():
        monkeypatch.setenv(name, value)
    async with drive(fake_adapter(env_policy="allowlist"), workspace=tmp_path) as d:
        turn = await d.prompt("ENV")
    seen = json.loads(turn.text)["env"]
    trace_id, span_id = recorded.ids("create_agent fake")
    assert seen["TRACEPARENT"].split("-")[1:3] == [trace_id, span_id]
    assert seen["OTEL_SERVICE_NAME"] == "master"
    assert "OTEL_EXPORTER_OTLP_HEADERS" not in seen, "exporter headers may hold credentials"
    assert recorded.span("invoke_agent fake").kind == SpanKind.CLIENT, "another process"


@pytest.mark.anyio
async def test_what_an_adapter_logs_during_a_turn_carries_the_turns_trace_and_span_ids(
    tmp_path: Path, recorded: Recorded, caplog: pytest.LogCaptureFixture
) -> None:
    async def logging_turn(turn: Turn, ctx: SessionContext) -> TurnResult:
        ctx.log.warning("agent note")
        return TurnResult()

    async with open_session(FunctionAdapter(logging_turn), workspace=tmp_path) as session:
        await session.send(session.control.prompt("hi"))
        with anyio.fail_after(WAIT):
            async for frame in session:
                if isinstance(frame, TurnEndFrame):
                    break
    turn = recorded.span("invoke_agent function")
    assert turn.context is not None
    [record] = [r for r in caplog.records if "agent note" in r.getMessage()]
    assert record.levelno == logging.WARNING
    message = record.getMessage()
    assert f"trace_id='{turn.context.trace_id:032x}'" in message
    assert f"span_id='{turn.context.span_id:016x}'" in message
