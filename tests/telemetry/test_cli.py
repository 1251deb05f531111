"""``serve --stdio --otel`` sends a session's spans to an OTLP collector, under the
Master's ``traceparent``; without OTEL settings the bridge imports nothing of
OpenTelemetry (its start stays as short as before)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from tests.cli.conftest import Bridge
from tests.process.helpers import fake_command
from tests.telemetry.collector import Collector

pytestmark = pytest.mark.anyio

TRACE_ID, PARENT_ID = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
STARTER_TRACE, STARTER_SPAN = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
"""The context of whoever started the command, given in its ``TRACEPARENT``."""
LIST_MODULES_AFTER = (
    "import sys\n"
    "from rawp_adapters.cli import main\n"
    "code = main(sys.argv[2:])\n"
    "open(sys.argv[1], 'w').write('\\n'.join(sorted(sys.modules)))\n"
    "sys.exit(code)\n"
)
"""``rawp-adapters ARGS`` as the console script runs it, then the modules it imported."""


def environment(**otel: str) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if not name.startswith("OTEL_")}
    return {**env, **otel}


def bridge_start(
    tmp_path: Path, env: dict[str, str], *args: str
) -> subprocess.CompletedProcess[bytes]:
    """``python ARGS`` with no input, as a Master starts a bridge that refuses to start."""
    return subprocess.run(
        [sys.executable, *args],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
        check=False,
    )


async def serve_one_turn(tmp_path: Path, env: dict[str, str], *options: str) -> set[str]:
    """A bridge to a fake agent through one prompt carrying the Master's traceparent;
    the modules the bridge imported."""
    listed = tmp_path / "modules.txt"
    settings = {"command": fake_command("--terminal"), "agent_name": "fake"}
    command = [sys.executable, "-c", LIST_MODULES_AFTER, str(listed)]
    command += ["serve", "--stdio", *options, "--adapter", "process"]
    command += ["--settings-json", json.dumps(settings), "--workspace", str(tmp_path)]
    with (tmp_path / "stderr").open("wb") as stderr:
        async with await anyio.open_process(command, stderr=stderr, env=env) as process:
            bridge = Bridge(process)
            await bridge.until("agent.state.changed", state="idle")
            prompt = {
                "type": "control.prompt.request",
                "session_id": bridge.session_id,
                "seq": 1,
                "timestamp": "2026-01-01T00:00:00.000Z",
                "metadata": {"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"},
                "payload": {"prompt_id": "p1", "text": "hi"},
            }
            await bridge.write(json.dumps(prompt).encode() + b"\n")
            await bridge.until("session.turn.end")
            await bridge.close_stdin()
            await bridge.rest()
            assert await bridge.exit_code() == 0, (tmp_path / "stderr").read_text()
    return set(listed.read_text().split())


async def test_serve_with_otel_sends_the_turns_span_to_the_collector_under_the_masters(
    tmp_path: Path,
) -> None:
    with Collector().running() as collector:
        env = environment(OTEL_EXPORTER_OTLP_ENDPOINT=collector.url)
        await serve_one_turn(tmp_path, env, "--otel")
    spans = collector.span_names()
    assert spans["invoke_agent fake"] == (TRACE_ID, PARENT_ID)
    assert "create_agent fake" in spans
    assert collector.posts.get("/v1/metrics"), "the metrics are exported too"


async def test_a_bridge_started_with_a_traceparent_opens_its_session_under_it(
    tmp_path: Path, anyio_backend: str
) -> None:
    with Collector().running() as collector:
        env = environment(OTEL_EXPORTER_OTLP_ENDPOINT=collector.url)
        env["TRACEPARENT"] = f"00-{STARTER_TRACE}-{STARTER_SPAN}-01"
        await serve_one_turn(tmp_path, env, "--otel", "--backend", anyio_backend)
    spans = collector.span_names()
    assert spans["create_agent fake"] == (STARTER_TRACE, STARTER_SPAN), "the agent's start"
    assert spans["invoke_agent fake"] == (TRACE_ID, PARENT_ID), "the prompt's own wins"


async def test_a_bridge_without_otel_settings_imports_nothing_of_opentelemetry(
    tmp_path: Path,
) -> None:
    modules = await serve_one_turn(tmp_path, environment())
    assert "rawp_adapter_process" in modules
    assert sorted(m for m in modules if m.startswith("opentelemetry")) == []


async def test_otel_sdk_disabled_turns_exporting_off_whatever_asks_for_it(
    tmp_path: Path,
) -> None:
    with Collector().running() as collector:
        env = environment(OTEL_EXPORTER_OTLP_ENDPOINT=collector.url, OTEL_SDK_DISABLED="true")
        modules = await serve_one_turn(tmp_path, env, "--otel")
    assert collector.posts == {}
    assert sorted(m for m in modules if m.startswith("opentelemetry")) == []


def test_otel_without_the_sdk_installed_names_the_extra_to_install(tmp_path: Path) -> None:
    hide_sdk = (
        "import sys\n"
        "sys.modules['opentelemetry.sdk'] = None\n"
        "from rawp_adapters.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    result = bridge_start(
        tmp_path, environment(), "-c", hide_sdk, "serve", "--stdio", "--otel", "--adapter", "sdk"
    )
    assert result.returncode == 2
    assert b"pip install 'rawp-adapters[otel]'" in result.stderr


@pytest.mark.parametrize("protocol", ["grpc", "http/json"])
def test_an_otlp_protocol_other_than_http_protobuf_is_refused_with_the_reason(
    tmp_path: Path, protocol: str
) -> None:
    env = environment(
        OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9", OTEL_EXPORTER_OTLP_PROTOCOL=protocol
    )
    result = bridge_start(
        tmp_path, env, "-m", "rawp_adapters.cli", "serve", "--stdio", "--adapter", "sdk"
    )
    assert result.returncode == 2
    assert f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol} is not supported".encode() in result.stderr
    assert result.stdout == b"", "no session was started"


def test_run_with_a_console_exporter_prints_the_turns_span_to_stderr(tmp_path: Path) -> None:
    env = environment(OTEL_TRACES_EXPORTER="console", OTEL_METRICS_EXPORTER="none")
    env["TRACEPARENT"] = f"00-{STARTER_TRACE}-{STARTER_SPAN}-01"
    command = [sys.executable, "-m", "rawp_adapters.cli", "run", "--yes", "--adapter", "sdk"]
    command += ["--setting", "core=demo", "--workspace", str(tmp_path), "Write notes.txt"]
    result = subprocess.run(
        command, env=env, capture_output=True, stdin=subprocess.DEVNULL, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr.decode()
    assert b'"name": "invoke_agent rawp-demo"' in result.stderr
    assert f'"trace_id": "0x{STARTER_TRACE}"'.encode() in result.stderr, "under its starter"
    assert f'"parent_id": "0x{STARTER_SPAN}"'.encode() in result.stderr
    assert b"invoke_agent" not in result.stdout, "the spans never go to stdout"
