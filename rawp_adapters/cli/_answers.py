"""How ``rawp-adapters run`` answers the agent's questions: ask on the terminal, or
allow or deny everything (``--yes`` / ``--no``). Both are reply policies for
:func:`rawp_adapters.host.answer_interactions`. Anything but an explicit allow
denies."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Final

import anyio

from rawp_adapters._frames import InteractionRequest
from rawp_adapters.cli._prompt import AnswerReader, NoAnswer, ask
from rawp_adapters.cli._render import DIM, Console, summarize_input
from rawp_adapters.host import Reply, allow_all, deny_all

_YES: Final = frozenset({"y", "yes"})
_DENY: Final = Reply.deny()
_TIMED_OUT: Final = Reply(timeout=True)


def subject(request: InteractionRequest) -> str:
    """What an interaction is about, in a few words."""
    if request.interaction_type == "PERMISSION":
        context = request.context
        return f"{context.tool_name} {summarize_input(context.tool_input)}"
    return request.title or request.message or request.interaction_type.lower()


class FixedAnswers:
    """``--yes``: allow everything (a SELECT gets its first option, an INPUT an empty
    string); ``--no``: deny everything. Each decision is shown."""

    def __init__(self, console: Console, *, allow: bool) -> None:
        self.console = console
        self.allow = allow

    def __call__(self, request: InteractionRequest) -> Reply:
        if not self.allow:
            self.console.line(f"denied {subject(request)} (--no)", DIM)
            return deny_all(request)
        self.console.line(f"allowed {subject(request)} (--yes)", DIM)
        return allow_all(request)


def time_limit(request: InteractionRequest, limit: float) -> float:
    """Seconds to wait for the person: ``limit``, but ending a little before the
    adapter's own deadline so that our timeout is not a late answer."""
    adapter_deadline = request.timeout_ms / 1000
    return max(0.0, min(limit, adapter_deadline - min(1.0, adapter_deadline / 10)))


class TerminalAnswers:
    """Asks each question on the terminal, one at a time, with a countdown. No answer
    in time sends ``control.interaction.timeout``; end of input denies."""

    def __init__(self, console: Console, reader: AnswerReader, *, limit: float, live: bool) -> None:
        self.console = console
        self.reader = reader
        self.limit = limit
        self.live = live
        self._terminal = anyio.Lock()

    async def __call__(self, request: InteractionRequest) -> Reply:
        deadline = anyio.current_time() + time_limit(request, self.limit)
        async with self._terminal:
            seconds = deadline - anyio.current_time()
            question, choices, parse = _question(request)
            if request.interaction_type == "PERMISSION" and (request.title or request.message):
                self.console.line(request.title or request.message or "", DIM)
            if request.interaction_type == "SELECT":
                for number, option in enumerate(request.options or [], start=1):
                    self.console.line(f"  {number}) {option}")
            line = (
                await ask(
                    question,
                    choices=choices,
                    seconds=seconds,
                    reader=self.reader,
                    console=self.console,
                    live=self.live,
                )
                if seconds > 0
                else NoAnswer.TIMEOUT
            )
        if line is NoAnswer.TIMEOUT:
            self.console.line(f"denied: no answer in {math.ceil(max(seconds, 0))}s", DIM)
            return _TIMED_OUT
        if line is NoAnswer.EOF:
            self.console.line("denied: no more input", DIM)
            return _DENY
        reply = parse(line.strip())
        self.console.line("allowed" if reply.decision == "allow" else "denied", DIM)
        return reply


def _question(request: InteractionRequest) -> tuple[str, str, Callable[[str], Reply]]:
    """The question, the hint of what to type, and how to read the answer."""
    kind = request.interaction_type
    if kind == "PERMISSION":
        return f"Allow {subject(request)}?", "[y/N]", _yes_no
    if kind == "CONFIRM":
        return subject(request), "[y/N]", _yes_no
    if kind == "SELECT":
        options = request.options or []
        return subject(request), f"[1-{len(options)}]", lambda line: _select(options, line)
    return subject(request), "[text]", Reply.allow


def _yes_no(line: str) -> Reply:
    return Reply.allow() if line.lower() in _YES else _DENY


def _select(options: list[str], line: str) -> Reply:
    if line in options:
        return Reply.allow(line)
    if line.isdigit() and 1 <= int(line) <= len(options):
        return Reply.allow(options[int(line) - 1])
    return _DENY
