"""The terminal question: countdown, timeout, end of input, late answers."""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from dataclasses import dataclass

import anyio
import pytest

from rawp_adapters.cli._prompt import AnswerReader, NoAnswer, ask
from rawp_adapters.cli._render import Console
from rawp_adapters.cli._threads import daemon_worker

pytestmark = pytest.mark.anyio


@dataclass
class Keyboard:
    """A stdin pipe the test types into."""

    stdin: io.TextIOWrapper
    write_fd: int

    def type(self, text: str) -> None:
        os.write(self.write_fd, text.encode())


@pytest.fixture
def keyboard() -> Iterator[Keyboard]:
    read_fd, write_fd = os.pipe()
    stdin = os.fdopen(read_fd, "r")
    yield Keyboard(stdin, write_fd)
    os.close(write_fd)
    stdin.close()


async def test_the_live_countdown_is_redrawn_in_place_each_second(keyboard: Keyboard) -> None:
    out = io.StringIO()
    console = Console(out, styled=False)
    async with daemon_worker("test-stdin") as worker:
        with anyio.fail_after(10):
            answer = await ask(
                "Allow x?",
                choices="[y/N]",
                seconds=1.1,
                reader=AnswerReader(keyboard.stdin, worker),
                console=console,
                live=True,
            )
    assert answer is NoAnswer.TIMEOUT
    # The first draw, one redraw of the same width that puts the cursor back where
    # the person was typing, and a newline when the time is up.
    assert out.getvalue() == "Allow x? [y/N] (2s) \x1b7\rAllow x? [y/N] (1s) \x1b8\n"
    assert console.at_line_start


async def test_a_line_typed_after_its_question_timed_out_does_not_answer_the_next(
    keyboard: Keyboard,
) -> None:
    console = Console(io.StringIO(), styled=False)
    async with daemon_worker("test-stdin") as worker:
        reader = AnswerReader(keyboard.stdin, worker)
        with anyio.fail_after(10):
            first = await ask(
                "First?", choices="", seconds=0.1, reader=reader, console=console, live=False
            )
            keyboard.type("y\nn\n")
            second = await ask(
                "Second?", choices="", seconds=5, reader=reader, console=console, live=False
            )
    assert first is NoAnswer.TIMEOUT
    assert second == "n"


async def test_end_of_input_is_reported_at_once_and_for_every_later_question() -> None:
    console = Console(io.StringIO(), styled=False)
    async with daemon_worker("test-stdin") as worker:
        reader = AnswerReader(io.StringIO("only\n"), worker)
        with anyio.fail_after(10):
            answers = [
                await ask("Q?", choices="", seconds=5, reader=reader, console=console, live=False)
                for _ in range(3)
            ]
    assert answers == ["only", NoAnswer.EOF, NoAnswer.EOF]


async def test_a_plain_question_is_one_line_with_the_seconds_left() -> None:
    out = io.StringIO()
    console = Console(out, styled=False)
    console.write("partial text")
    async with daemon_worker("test-stdin") as worker:
        reader = AnswerReader(io.StringIO("y\n"), worker)
        with anyio.fail_after(10):
            answer = await ask(
                "Allow?", choices="[y/N]", seconds=27, reader=reader, console=console, live=False
            )
    assert answer == "y"
    assert out.getvalue() == "partial text\nAllow? [y/N] (27s)\n"
