"""Every snippet of docs/host-tools.md runs: the files it includes from
docs/snippets/host_tools/ are included verbatim and run here against real sessions."""

from __future__ import annotations

import ast
import importlib
import re
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

from rawp_adapters import AgentMetadata
from rawp_adapters.frames import ToolInvokeResultFrame, ToolInvokeStreamFrame
from rawp_adapters.testing import FunctionAdapter, assert_valid_stream, use_host_tool

pytestmark = pytest.mark.anyio

DOCS = Path(__file__).parents[2] / "docs"
GUIDE = (DOCS / "host-tools.md").read_text(encoding="utf-8")
SNIPPETS = DOCS / "snippets" / "host_tools"
BLOCK = re.compile(r"(?:<!-- snippet: (\S+) -->\n)?```(\w+)\n(.*?)```", re.DOTALL)
BLOCKS = [(m.group(1), m.group(2), m.group(3)) for m in BLOCK.finditer(GUIDE)]
DEMO = AgentMetadata(adapter_type="sdk", settings={"core": "demo", "core_options": {"delay_ms": 0}})


def snippet(name: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(SNIPPETS))
    return importlib.import_module(name)


def test_every_snippet_file_is_included_verbatim() -> None:
    included = {name: text for name, _, text in BLOCKS if name is not None}
    assert sorted(included) == sorted(f"host_tools/{p.name}" for p in SNIPPETS.glob("*.py"))
    for name, text in included.items():
        assert text == (DOCS / "snippets" / name).read_text(encoding="utf-8"), name


def test_the_omp_to_claude_example_uses_the_snippets_functions() -> None:
    (example,) = (text for name, _, text in BLOCKS if name is None)
    tree = ast.parse("async def example():\n" + textwrap.indent(example, "    "))
    called = {
        node.func.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }
    assert {"ask", "delegating_tools", "create_adapter", "AgentMetadata"} <= called


@pytest.mark.parametrize(
    ("word", "answer", "is_error"),
    [
        ("turn", "one prompt and everything the agent does for it", False),
        ("seq", "'seq' is not in the glossary", True),
    ],
)
async def test_the_published_glossary_tool_streams_and_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, word: str, answer: str, is_error: bool
) -> None:
    glossary = snippet("glossary", monkeypatch)
    adapter = FunctionAdapter(use_host_tool("lookup", {"word": word}), host_tools=True)
    frames = await glossary.ask(adapter, str(tmp_path), "what is a turn?")
    assert_valid_stream(frames)
    assert [tool.name for tool in adapter.tools] == ["lookup"]
    [stream] = [f for f in frames if isinstance(f, ToolInvokeStreamFrame)]
    assert stream.payload.output == f"looking up {word!r}…\n"
    [result] = [f for f in frames if isinstance(f, ToolInvokeResultFrame)]
    assert (result.payload.output, result.payload.is_error) == (answer, is_error)


async def test_the_delegating_master_asks_its_policy_for_the_sub_agent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    glossary = snippet("glossary", monkeypatch)
    delegate = snippet("delegate", monkeypatch)
    delegate.asked.clear()
    parent = FunctionAdapter(
        use_host_tool("Task", {"description": "note", "prompt": "note it in notes.txt"}),
        host_tools=True,
    )
    frames = await glossary.ask(
        parent, str(tmp_path), "delegate", delegate.delegating_tools(DEMO), delegate.policy
    )
    assert_valid_stream(frames)
    assert delegate.asked == ["sub-agent of host-1 asks for write_file"]
    assert (tmp_path / "notes.txt").exists()
    [result] = [f for f in frames if isinstance(f, ToolInvokeResultFrame)]
    assert result.payload.output_type == "agent_result"
    assert result.payload.output.startswith("Done. Wrote")
