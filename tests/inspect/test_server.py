"""The inspector's server, without a browser: what it refuses and how it is guarded."""

from __future__ import annotations

import http.client
import json
import signal
import socket
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from rawp_adapters.inspect._command import check_file
from tests.inspect.conftest import Frames, Server, fetch, inspector

GUARDED = ["/", "/static/inspector.js", "/api/adapters", "/api/feeds", "/api/feeds/f1/events"]


@pytest.mark.parametrize("path", GUARDED)
def test_a_request_without_the_token_is_refused(server: Server, path: str) -> None:
    assert fetch(server, path)[0] == 403
    assert fetch(server, path, token=server.token + "x")[0] == 403
    assert fetch(server, path + ("&" if "?" in path else "?") + "token=wrong")[0] == 403


@pytest.mark.parametrize("host", ["127.0.0.2", "::1"])
def test_the_inspector_listens_on_the_host_and_port_given_and_nowhere_else(
    tmp_path: Path, host: str
) -> None:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as probe:
        probe.bind((host, 0))
        port = probe.getsockname()[1]
    with inspector(tmp_path, "--host", host, "--port", str(port)) as server:
        assert server.base == f"http://{f'[{host}]' if ':' in host else host}:{port}"
        body = {"adapter_type": "sdk", "workspace": str(tmp_path)}
        status, _, started = fetch(server, "/api/sessions", token=server.token, body=body)
        assert status == 200
        frames = Frames(server, json.loads(started)["feed_id"])
        frames.until("session.capabilities")
        process = psutil.Process(server.process.pid)
        listening = [
            (connection.laddr.ip, connection.laddr.port)
            for each in (process, *process.children(recursive=True))
            for connection in each.net_connections("inet")
            if connection.status == psutil.CONN_LISTEN
        ]
        frames.connection.close()
    # A running session (the demo core's bridge among the processes) opens nothing else.
    assert listening == [(host, port)]


def test_a_start_without_the_token_starts_nothing(tmp_path: Path) -> None:
    # An inspector of its own: the module's server holds the sessions other tests start.
    with inspector(tmp_path) as server:
        body = {"adapter_type": "sdk", "workspace": str(server.workspace)}
        assert fetch(server, "/api/sessions", body=body)[0] == 403
        status, _, listed = fetch(server, "/api/feeds", token=server.token)
    assert status == 200
    assert json.loads(listed) == []


def test_the_page_comes_with_the_token_and_a_content_security_policy(server: Server) -> None:
    assert server.url.startswith("http://127.0.0.1:")
    status, headers, page = fetch(server, "/?token=" + server.token)
    assert status == 200
    policy = {k.lower(): v for k, v in headers.items()}["content-security-policy"]
    assert "script-src 'self'" in policy
    assert "unsafe-inline" not in policy
    assert b'<script src="/static/inspector.js?token=' + server.token.encode() in page


def test_a_start_in_a_workspace_that_is_no_directory_is_refused_saying_so(
    server: Server,
) -> None:
    body = {"adapter_type": "sdk", "workspace": str(server.workspace / "absent")}
    status, _, answer = fetch(server, "/api/sessions", token=server.token, body=body)
    assert status == 400
    assert "workspace must be an existing absolute directory" in json.loads(answer)["error"]


def test_a_start_of_an_adapter_not_installed_is_refused_naming_it(server: Server) -> None:
    body = {"adapter_type": "nonesuch", "workspace": str(server.workspace)}
    status, _, answer = fetch(server, "/api/sessions", token=server.token, body=body)
    assert status == 400
    assert "nonesuch" in json.loads(answer)["error"]


def test_the_start_form_offers_each_adapter_with_its_settings_schema(server: Server) -> None:
    status, _, answer = fetch(server, "/api/adapters", token=server.token)
    forms = {(f["adapter_type"], f["protocol"]): f for f in json.loads(answer)["adapters"]}
    assert status == 200
    assert forms["sdk", None]["schema"]["properties"]["core"]["default"] == "demo"
    assert "env_policy" in forms["process", None]["schema"]["properties"]


def test_the_inspect_command_is_imported_only_when_it_runs() -> None:
    script = (
        "import sys\n"
        "from rawp_adapters.cli import build_parser, main\n"
        "build_parser().parse_args(['serve', '--stdio'])\n"
        "main(['adapters'])\n"
        "loaded = [m for m in sys.modules if m.startswith(('starlette', 'uvicorn',"
        " 'rawp_adapters.inspect'))]\n"
        "sys.stderr.write(repr(loaded))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stderr.strip() == "[]"


def test_a_control_request_that_names_no_control_frame_is_refused_with_the_known_ones(
    server: Server,
) -> None:
    body = {"adapter_type": "sdk", "workspace": str(server.workspace)}
    status, _, started = fetch(server, "/api/sessions", token=server.token, body=body)
    assert status == 200
    control = f"/api/feeds/{json.loads(started)['feed_id']}/control"
    status, _, answer = fetch(server, control, token=server.token, body={"op": "fly"})
    assert status == 400
    assert "unknown op 'fly'; known: prompt, abort, steer" in json.loads(answer)["error"]
    status, _, answer = fetch(server, control, token=server.token, body={"op": "prompt"})
    assert status == 400
    assert "'text' must be a non-empty string" in json.loads(answer)["error"]
    status, _, answer = fetch(server, control, token=server.token, body={"op": "end"})
    assert status == 200
    assert json.loads(answer) == {"type": "control.session.end", "seq": 1}


def test_the_server_stops_on_sigterm_while_a_page_reads_a_live_session(tmp_path: Path) -> None:
    with inspector(tmp_path) as server:
        body = {"adapter_type": "sdk", "workspace": str(tmp_path)}
        status, _, started = fetch(server, "/api/sessions", token=server.token, body=body)
        assert status == 200
        feed_id = json.loads(started)["feed_id"]
        host, port = server.base.removeprefix("http://").rsplit(":", 1)
        reader = http.client.HTTPConnection(host, int(port), timeout=30)
        reader.request("GET", f"/api/feeds/{feed_id}/events?token={server.token}")
        events = reader.getresponse()
        assert events.status == 200
        assert events.readline().startswith(b"id: ")
        server.process.send_signal(signal.SIGTERM)
        # uvicorn raises the signal again once it has shut down, as is the convention.
        assert server.process.wait(timeout=20) == -signal.SIGTERM
        reader.close()
    stderr = (tmp_path / "inspector.stderr").read_text()
    assert "Traceback" not in stderr
    assert "graceful shutdown exceeded" not in stderr


def test_a_recording_opened_from_the_command_line_is_a_feed_with_its_verdict(
    tmp_path: Path, demo_lines: list[str]
) -> None:
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join(demo_lines[:-1]) + "\n")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with inspector(tmp_path, "--port", str(port), "--open", str(broken)) as server:
        assert server.base == f"http://127.0.0.1:{port}"
        frames = Frames(server, "f1")
        assert frames.until("session.turn.end")["type"] == "session.turn.end"
        assert frames.ended()["violations"] == 1
        frames.connection.close()


def test_a_recording_that_cannot_be_read_stops_the_command_naming_it(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "rawp_adapters.cli", "inspect", "--open", str(tmp_path / "no")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert f"cannot read {tmp_path / 'no'}" in done.stderr


def test_with_record_each_session_is_written_as_it_comes_and_keeps_every_rule(
    tmp_path: Path,
) -> None:
    recorded = tmp_path / "recorded"
    recorded.mkdir()
    with inspector(tmp_path, "--record", str(recorded)) as server:
        body = {"adapter_type": "sdk", "workspace": str(tmp_path)}
        status, _, started = fetch(server, "/api/sessions", token=server.token, body=body)
        assert status == 200
        feed_id = json.loads(started)["feed_id"]
        frames = Frames(server, feed_id)
        control = f"/api/feeds/{feed_id}/control"
        fetch(server, control, token=server.token, body={"op": "prompt", "text": "Write hi"})
        question = frames.until("agent.interaction.request")["payload"]["interaction_id"]
        fetch(server, control, token=server.token, body={"op": "deny", "interaction_id": question})
        frames.until("session.turn.end")
        fetch(server, control, token=server.token, body={"op": "end"})
        frames.until("session.closed")
        frames.connection.close()
        download = f"/api/feeds/{feed_id}/recording.jsonl?token={server.token}"
        saved = fetch(server, download)[2].decode()
    (written,) = recorded.iterdir()
    assert written.name == f"{feed_id}-sdk.jsonl"
    assert written.read_text() == saved
    types = [json.loads(line)["type"] for line in saved.splitlines()]
    assert types[0] == "session.capabilities"
    assert "control.interaction.response" in types
    assert types[-1] == "session.closed"
    assert check_file(written) == 0


def test_record_into_what_is_no_directory_stops_the_command(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "rawp_adapters.cli", "inspect", "--record", str(tmp_path / "no")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "is not a directory" in done.stderr
