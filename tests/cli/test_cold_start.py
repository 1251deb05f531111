"""``rawp-adapters serve --stdio`` imports what a bridge needs and nothing else: a Master
that spawns a bridge per session pays for every import at each start (the time is
measured in ``benchmarks/bench_cold_start.py``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from tests.cli.conftest import Bridge
from tests.process.helpers import fake_command

pytestmark = pytest.mark.anyio

SERVE_THEN_LIST_MODULES = (
    "import sys\n"
    "from rawp_adapters.cli import main\n"
    "code = main(sys.argv[2:])\n"
    "done = sorted(sys.modules)\n"
    "tokenize = sys.modules.get('tokenize')\n"
    "if tokenize is not None and tokenize._compile.cache_info().currsize:\n"
    "    done.append(TOKENIZE_COMPILED)\n"
    "open(sys.argv[1], 'w').write('\\n'.join(done))\n"
    "sys.exit(code)\n"
)
"""``rawp-adapters ARGS`` as the console script runs it, then every module it imported
written to a file (stdout is the frame stream), and whether tokenize compiled its
patterns (pydantic reads a builtin's text signature with it, e.g. for a
``default_factory=list``: milliseconds at each start)."""
TOKENIZE_COMPILED = "tokenize-patterns-compiled"

NOT_FOR_SERVE = (
    "jsonschema",
    "rawp_adapters.testing",
    "rawp_adapters._schema",
    "rawp_adapters.remote",
    "rawp_adapters.inspect",
    "rawp_adapters.cli._check",
    "rawp_adapters.cli._run",
    "rawp_adapters.cli._render",
    "rawp_adapters.cli._worker",
    "rawp_adapters.host._host",
    "rawp_adapters.host._tools",
    "rawp_adapters.host._delegation",
    "opentelemetry",
    "email.parser",
)
"""What other commands need: the conformance kit, frame schemas, NATS workers, the
inspector, ``run``'s terminal view, host tools and delegation (jsonschema is imported by
the first host tool catalog); OpenTelemetry, imported by a host that configures it; and
the parser of package metadata files, which reading a distribution's version (``--version``)
imports."""


async def test_a_bridge_that_serves_a_turn_imports_no_other_commands_code(
    tmp_path: Path,
) -> None:
    listed = tmp_path / "modules.txt"
    settings = {"command": fake_command("--terminal"), "agent_name": "fake"}
    program = f"TOKENIZE_COMPILED = {TOKENIZE_COMPILED!r}\n{SERVE_THEN_LIST_MODULES}"
    command = [sys.executable, "-c", program, str(listed)]
    command += ["serve", "--stdio", "--adapter", "process"]
    command += ["--settings-json", json.dumps(settings), "--workspace", str(tmp_path)]
    with (tmp_path / "stderr").open("wb") as stderr:
        async with await anyio.open_process(command, stderr=stderr) as process:
            bridge = Bridge(process)
            await bridge.until("agent.state.changed", state="idle")
            await bridge.send("control.prompt.request", {"prompt_id": "p1", "text": "hi"}, seq=1)
            end = await bridge.until("session.turn.end")
            await bridge.close_stdin()
            await bridge.rest()
            assert await bridge.exit_code() == 0, (tmp_path / "stderr").read_text()
    assert end["payload"]["stop_reason"] == "end_turn"
    modules = set(listed.read_text().split())
    assert "rawp_adapter_process" in modules
    imported = sorted(m for m in modules if m.startswith(NOT_FOR_SERVE))
    assert imported == []
    assert TOKENIZE_COMPILED not in modules
    # structlog is imported by the first event logged at the level (warning): none in a
    # turn that goes well, but a loaded machine may make the adapter warn.
    logged = (tmp_path / "stderr").read_text()
    assert any(m.split(".")[0] == "structlog" for m in modules) == bool(logged), logged


LIST_BUILT_MODELS = (
    "import json, pydantic, rawp_adapters.cli\n"
    "from rawp_adapters import _adapter, _frames\n"
    "models = {c for m in (_adapter, _frames) for c in vars(m).values() if isinstance(c, type)"
    " and issubclass(c, pydantic.BaseModel)}\n"
    "print(json.dumps(sorted(c.__name__ for c in models if c.__pydantic_complete__)))\n"
)
BUILT_AS_DEFAULTS = ["InteractionContext", "ModelListRequest"]
"""The models whose instance is another model's default value (built to make it)."""


def test_the_command_builds_no_models_validator_before_it_is_used() -> None:
    listed = subprocess.run(
        [sys.executable, "-c", LIST_BUILT_MODELS], capture_output=True, check=True, timeout=60
    )
    assert json.loads(listed.stdout) == BUILT_AS_DEFAULTS
