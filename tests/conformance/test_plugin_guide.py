"""Every snippet of docs/plugins.md runs: the files it includes from docs/snippets/ are
included verbatim and run here, and its other blocks are parsed or run."""

from __future__ import annotations

import importlib
import json
import re
import shlex
import shutil
import subprocess
import sys
import threading
import tomllib
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from rawp_adapters import Adapter, AgentMetadata, create_adapter
from rawp_adapters.cli import main
from rawp_adapters.testing import RULES, ConformanceSubject, Prompts, check_adapter, drive

DOCS = Path(__file__).parents[2] / "docs"
GUIDE = (DOCS / "plugins.md").read_text(encoding="utf-8")
SNIPPETS = DOCS / "snippets"
BLOCK = re.compile(r"(?:<!-- snippet: (\S+) -->\n)?```(\w+)\n(.*?)```", re.DOTALL)
BLOCKS = [(m.group(1), m.group(2), m.group(3)) for m in BLOCK.finditer(GUIDE)]


@pytest.fixture
def snippets_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(SNIPPETS))


def test_every_included_snippet_is_the_file_verbatim() -> None:
    included = [(name, text) for name, _, text in BLOCKS if name is not None]
    files = sorted(p.name for p in SNIPPETS.iterdir() if p.suffix in (".py", ".toml"))
    assert sorted(name for name, _ in included) == files
    for name, text in included:
        assert text == (SNIPPETS / name).read_text(encoding="utf-8"), name


def test_every_other_block_is_a_protocol_plugin_the_check_command_or_a_subject() -> None:
    others = [(lang, text) for name, lang, text in BLOCKS if name is None]
    assert [lang for lang, _ in others] == ["toml", "json", "text", "sh", "python"]
    (toml, metadata, _, _, _) = (text for _, text in others)
    (name,) = tomllib.loads(toml)["project"]["entry-points"]["rawp_adapters.adapters"]
    parsed = AgentMetadata.model_validate(json.loads(metadata))
    assert name == f"{parsed.adapter_type}.{parsed.settings['protocol']}" == "process.acp"


def test_the_check_command_of_the_guide_passes(capsys: pytest.CaptureFixture[str]) -> None:
    (command,) = (text for name, lang, text in BLOCKS if lang == "sh")
    argv = shlex.split(command)
    assert argv[0] == "rawp-adapters"
    assert main(argv[1:]) == 0, capsys.readouterr().out


@pytest.mark.usefixtures("snippets_importable")
def test_the_packaged_entry_points_load_the_snippets_classes() -> None:
    groups = tomllib.loads((SNIPPETS / "pyproject.toml").read_text())["project"]["entry-points"]
    ((adapter_name, adapter_target),) = groups["rawp_adapters.adapters"].items()
    adapter_class = EntryPoint(adapter_name, adapter_target, "rawp_adapters.adapters").load()
    assert issubclass(adapter_class, Adapter)
    assert adapter_class.adapter_type == adapter_name
    ((core_name, core_target),) = groups["rawp_adapters.sdk_cores"].items()
    core = EntryPoint(core_name, core_target, "rawp_adapters.sdk_cores").load()()
    assert core.name == core_name


@pytest.mark.anyio
@pytest.mark.usefixtures("snippets_importable")
async def test_the_guides_adapter_passes_the_kit() -> None:
    echo_adapter: type[Adapter] = importlib.import_module("my_echo").EchoAdapter
    subject = ConformanceSubject(
        lambda: echo_adapter.from_settings({"prefix": "> "}),
        prompts=Prompts(answer="hello", tool="shout hello", busy="wait"),
        permission_timeout_ms=200,
        timeout=10,
    )
    report = await check_adapter(subject)
    assert report.ok, report.format()
    assert {r.rule.id for r in report.results if r.status == "passed"} >= {
        "permission-deadline",
        "permission-request",
        "tool-events",
    }


@pytest.mark.anyio
@pytest.mark.usefixtures("snippets_importable")
async def test_the_guides_core_answers_behind_the_sdk_adapter(tmp_path: Path) -> None:
    adapter = create_adapter(
        AgentMetadata(adapter_type="sdk", settings={"core": "my_core:UpperCore"})
    )
    async with drive(adapter, workspace=tmp_path) as d:
        turn = await d.prompt("hello")
    assert turn.text == "HELLO"


@pytest.mark.anyio
@pytest.mark.usefixtures("snippets_importable")
async def test_the_guides_asyncio_only_core_answers_on_either_loop_and_leaves_no_thread(
    tmp_path: Path,
) -> None:
    adapter = create_adapter(
        AgentMetadata(adapter_type="sdk", settings={"core": "my_asyncio_core:WordsCore"})
    )
    async with drive(adapter, workspace=tmp_path) as d:
        turn = await d.prompt("hello from asyncio")
    assert (turn.stop_reason, turn.text) == ("end_turn", "hello from asyncio ")
    assert [t for t in threading.enumerate() if t.name.startswith("words-")] == []


def test_the_guides_remote_subject_opens_its_sessions_on_a_worker() -> None:
    (example,) = (text for name, lang, text in BLOCKS if lang == "python" and name is None)
    namespace: dict[str, object] = {}
    exec(example, namespace)
    subject = namespace["subject"]
    assert isinstance(subject, ConformanceSubject)
    assert subject.open_session is namespace["open_on_a_worker"]


def test_the_guides_pytest_module_runs_every_rule_through_the_plugin(tmp_path: Path) -> None:
    for name in ("my_echo.py", "test_my_echo.py"):
        shutil.copy(SNIPPETS / name, tmp_path / name)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "test_my_echo.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "test_rule[asyncio-MUST:permission-deadline] PASSED" in result.stdout
    assert "test_rule[asyncio-CAPABILITY:compaction] SKIPPED" in result.stdout


def test_the_guides_rule_table_lists_every_rule_of_the_kit() -> None:
    rows = re.findall(r"^\| (MUST|CAPABILITY|ADVISORY) \| `([\w-]+)` \| (.*) \|$", GUIDE, re.M)
    assert rows == [(rule.tier, rule.id, rule.summary) for rule in RULES]
