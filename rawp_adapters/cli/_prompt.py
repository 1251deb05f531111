"""Asking one question on the terminal with a visible countdown.

On a TTY the countdown is redrawn in place once a second (what the person has
typed stays where it is); otherwise the question is one plain line. Reading never
blocks the event loop: stdin is read on a daemon thread.
"""

from __future__ import annotations

import math
import shutil
from enum import Enum
from typing import Final, TextIO

import anyio

from rawp_adapters.cli._render import Console, safe_text
from rawp_adapters.cli._threads import DaemonWorker

_SAVE_CURSOR: Final = "\x1b7"
_RESTORE_CURSOR: Final = "\x1b8"
_TYPING_ROOM: Final = 12


class NoAnswer(Enum):
    TIMEOUT = "timeout"
    EOF = "eof"


class AnswerReader:
    """Reads stdin one line per question. A line typed after its question timed out
    is dropped, never taken as the answer to the next one."""

    def __init__(self, stdin: TextIO, worker: DaemonWorker) -> None:
        self._stdin = stdin
        self._worker = worker
        self._eof = False

    async def readline(self) -> str | None:
        """The next line without its line ending, or ``None`` at end of input."""
        if self._eof:
            return None
        try:
            line = await self._worker.call(self._stdin.readline)
        except (OSError, ValueError):  # stdin closed or unreadable: no more answers
            line = ""
        if not line:
            self._eof = True
            return None
        return line.rstrip("\r\n")

    def discard_typeahead(self) -> None:
        """Drop what was typed before the question appeared (a TTY on POSIX only)."""
        if not self._stdin.isatty():
            return
        try:
            import termios

            termios.tcflush(self._stdin.fileno(), termios.TCIFLUSH)
        except (ImportError, OSError):
            pass


async def ask(
    question: str,
    *,
    choices: str,
    seconds: float,
    reader: AnswerReader,
    console: Console,
    live: bool,
) -> str | NoAnswer:
    """Show ``question``, the ``choices`` hint (e.g. ``[y/N]``) and a countdown, and
    wait for one line of answer.

    ``live``: redraw the countdown in place (stdin and the console are a TTY).
    Returns the line typed, :attr:`NoAnswer.TIMEOUT` when ``seconds`` pass,
    :attr:`NoAnswer.EOF` when stdin is closed.
    """
    total = max(0, math.ceil(seconds))
    width = len(str(total))
    console.end_line()
    if live:
        question = _fit(question, len(choices) + width + 5) + f" {choices}"
        reader.discard_typeahead()
        console.write(f"{question} ({total:>{width}}s) ")
    else:
        console.line(f"{question} {choices} ({total}s)")
    answer: str | NoAnswer = NoAnswer.TIMEOUT
    deadline = anyio.current_time() + seconds
    async with anyio.create_task_group() as tg:
        if live:
            tg.start_soon(_count_down, question, total, width, deadline, console)
        with anyio.move_on_after(seconds):
            line = await reader.readline()
            answer = NoAnswer.EOF if line is None else line
        tg.cancel_scope.cancel()
    if live and isinstance(answer, NoAnswer):
        console.write("\n")
    elif live:
        console.at_line_start = True  # the terminal echoed the Enter
    return answer


async def _count_down(
    question: str, total: int, width: int, deadline: float, console: Console
) -> None:
    for remaining in range(total - 1, 0, -1):
        await anyio.sleep_until(deadline - remaining)
        line = f"{safe_text(question)} ({remaining:>{width}}s) "
        console.out.write(f"{_SAVE_CURSOR}\r{line}{_RESTORE_CURSOR}")
        console.out.flush()


def _fit(question: str, suffix: int) -> str:
    """Keep the whole line on one terminal row, or the redraw would land on the wrong
    row: ``suffix`` columns follow the question, then room for typing."""
    columns = shutil.get_terminal_size(fallback=(80, 24)).columns
    room = columns - suffix - _TYPING_ROOM
    return question if len(question) <= room else question[: max(room - 3, 10)] + "..."
