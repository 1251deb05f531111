"""``rawp-adapters run`` in-process: rendering, the permission question, exit codes."""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

import anyio
import pytest

from rawp_adapters import Question, SessionContext, StartFailed, Turn, TurnResult
from rawp_adapters.cli._answers import FixedAnswers, TerminalAnswers
from rawp_adapters.cli._prompt import AnswerReader
from rawp_adapters.cli._render import Console, TerminalView
from rawp_adapters.cli._run import run_prompt
from rawp_adapters.cli._threads import daemon_worker
from rawp_adapters.frames import TextDelta
from rawp_adapters.host import Policy
from rawp_adapters.testing import FunctionAdapter, TurnFunction
from tests.cli.agents import NOTES, ask_to_write, fail, think_then_answer

pytestmark = pytest.mark.anyio

QUESTION = "Allow write_file {path: notes.txt, content: hi}? [y/N]"


@pytest.fixture
def silent_stdin() -> Iterator[TextIO]:
    """A stdin on which nobody ever types (a pipe whose writer stays open)."""
    read_fd, write_fd = os.pipe()
    stdin = os.fdopen(read_fd, "r")
    yield stdin
    os.close(write_fd)
    stdin.close()


async def run(
    workspace: Path,
    script: TurnFunction,
    *,
    stdin: TextIO | None = None,
    limit: float = 20.0,
    fixed: bool | None = None,
    adapter: FunctionAdapter | None = None,
) -> tuple[int, str]:
    out = io.StringIO()
    console = Console(out, styled=False)
    async with daemon_worker("test-stdin") as worker:
        policy: Policy
        if fixed is None:
            reader = AnswerReader(stdin or io.StringIO(""), worker)
            policy = TerminalAnswers(console, reader, limit=limit, live=False)
        else:
            policy = FixedAnswers(console, allow=fixed)
        with anyio.fail_after(20):
            code = await run_prompt(
                adapter or FunctionAdapter(script),
                "go",
                workspace=workspace,
                show=TerminalView(console).show,
                policy=policy,
                notify=console.line,
                handle_interrupts=False,
            )
    return code, out.getvalue()


async def test_text_thinking_and_tool_calls_are_shown_as_they_stream(tmp_path: Path) -> None:
    code, shown = await run(tmp_path, think_then_answer)
    assert code == 0
    assert shown == (
        "  | Let me\n  | think\n-> bash {command: ls}\n<- bash: a (+2 more lines)\nThree files.\n"
    )


@pytest.mark.parametrize("answer", ["y", "Y", "yes", " yes "])
async def test_answering_yes_allows_the_permission_request(tmp_path: Path, answer: str) -> None:
    code, shown = await run(tmp_path, ask_to_write, stdin=io.StringIO(answer + "\n"))
    assert code == 0
    assert (tmp_path / NOTES).read_text() == "hi"
    assert shown == (
        f"-> write_file {{path: notes.txt, content: hi}}\n{QUESTION} (20s)\nallowed\n"
        "<- write_file: wrote notes.txt\n"
    )


@pytest.mark.parametrize("answer", ["", "n", "no", "maybe", "yess"])
async def test_any_other_answer_denies(tmp_path: Path, answer: str) -> None:
    code, shown = await run(tmp_path, ask_to_write, stdin=io.StringIO(answer + "\n"))
    assert code == 0
    assert not (tmp_path / NOTES).exists()
    assert "\ndenied\n<- write_file failed: not allowed (answered)\n" in shown


async def test_end_of_input_denies_the_permission_request(tmp_path: Path) -> None:
    code, shown = await run(tmp_path, ask_to_write, stdin=io.StringIO(""))
    assert code == 0
    assert not (tmp_path / NOTES).exists()
    assert f"{QUESTION} (20s)\ndenied: no more input\n" in shown
    assert "not allowed (answered)" in shown


async def test_no_answer_in_time_sends_a_timeout_and_the_agent_is_denied(
    tmp_path: Path, silent_stdin: TextIO
) -> None:
    started = anyio.current_time()
    code, shown = await run(tmp_path, ask_to_write, stdin=silent_stdin, limit=0.3)
    assert code == 0
    assert not (tmp_path / NOTES).exists()
    assert f"{QUESTION} (1s)\ndenied: no answer in 1s\n" in shown
    # The adapter's own deadline is 30 s: a timeout this early came from the CLI.
    assert "not allowed (timeout)" in shown
    assert anyio.current_time() - started < 15


async def test_yes_flag_allows_and_no_flag_denies_without_asking(tmp_path: Path) -> None:
    code, shown = await run(tmp_path, ask_to_write, fixed=True)
    assert (code, (tmp_path / NOTES).exists()) == (0, True)
    assert "allowed write_file {path: notes.txt, content: hi} (--yes)\n" in shown
    (tmp_path / NOTES).unlink()
    code, shown = await run(tmp_path, ask_to_write, fixed=False)
    assert (code, (tmp_path / NOTES).exists()) == (0, False)
    assert "denied write_file {path: notes.txt, content: hi} (--no)\n" in shown


async def choose(turn: Turn, ctx: SessionContext) -> TurnResult:
    outcome = await ctx.interact(
        Question("SELECT", turn_id=turn.turn_id, title="Which model?", options=("small", "large"))
    )
    text = f"{outcome.decision}:{outcome.value}"
    await ctx.emit(TextDelta(turn_id=turn.turn_id, index=0, text=text))
    return TurnResult()


@pytest.mark.parametrize(
    ("answer", "said"), [("2", "allow:large"), ("small", "allow:small"), ("3", "deny:None")]
)
async def test_a_select_question_takes_a_number_or_an_option(
    tmp_path: Path, answer: str, said: str
) -> None:
    code, shown = await run(tmp_path, choose, stdin=io.StringIO(answer + "\n"))
    assert code == 0
    assert shown.startswith("  1) small\n  2) large\nWhich model? [1-2] (")
    assert shown.endswith(f"{said}\n")


async def test_a_failed_turn_shows_the_error_and_exits_1(tmp_path: Path) -> None:
    code, shown = await run(tmp_path, fail)
    assert code == 1
    assert shown == "Trying\nerror [AGENT_ERROR]: the model is overloaded\n(turn ended: error)\n"


async def test_an_agent_that_cannot_start_exits_1_saying_why(tmp_path: Path) -> None:
    adapter = FunctionAdapter(start_error=StartFailed.of("no such binary: omp"))
    code, shown = await run(tmp_path, ask_to_write, adapter=adapter)
    assert code == 1
    assert shown.startswith("error [SPAWN_FAILED]: no such binary: omp\n")
    assert adapter.prompts == []
