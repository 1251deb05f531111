"""Check a recorded frame stream against the rules every adapter keeps."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from rawp_adapters._codec import CONTROL_FRAME_TYPES, frame_from_dict
from rawp_adapters._errors import FrameError, RawpError
from rawp_adapters._frames import Envelope, SessionErrorCode


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken rule: which rule, at which frame (index in the stream), and why."""

    rule: str
    index: int
    detail: str

    def __str__(self) -> str:
        return f"[{self.rule}] frame {self.index}: {self.detail}"


class InvariantError(RawpError, AssertionError):
    """A frame stream breaks the DPS rules: every :class:`Violation` found."""

    def __init__(self, violations: Sequence[Violation]) -> None:
        super().__init__("frame stream breaks the DPS rules:\n" + "\n".join(map(str, violations)))
        self.violations = list(violations)


def _as_frame(item: Envelope | dict[str, Any] | str | bytes) -> Envelope:
    if isinstance(item, Envelope):
        return item
    if isinstance(item, str | bytes):
        item = json.loads(item)
    assert isinstance(item, dict)
    return frame_from_dict(item)


class _Checker:
    def __init__(self) -> None:
        self.violations: list[Violation] = []
        self.session_id: str | None = None
        self.next_seq = 1
        self.closed_at: int | None = None
        self.open_turn: str | None = None
        self.turn_has_error = False
        self.open_interactions: dict[str, str | None] = {}
        self.resolved_interactions: set[str] = set()
        self.pending_unknown_answers = 0
        self.tools_open: set[str] = set()
        self.tools_done: set[str] = set()

    def fail(self, rule: str, index: int, detail: str) -> None:
        self.violations.append(Violation(rule, index, detail))

    def control(self, index: int, frame: Envelope) -> None:
        payload: Any = getattr(frame, "payload", None)
        interaction_id = getattr(payload, "interaction_id", None)
        if interaction_id is None:
            return
        if interaction_id not in self.open_interactions:
            # Not open as far as the stream shows: the session must say so.
            self.pending_unknown_answers += 1

    def client(self, index: int, frame: Envelope) -> None:
        ftype: str = getattr(frame, "type", "")
        payload: Any = getattr(frame, "payload", None)
        if index == 0 and ftype != "session.capabilities":
            self.fail("capabilities-first", index, f"first frame is {ftype}")
        elif index > 0 and ftype == "session.capabilities":
            self.fail("capabilities-first", index, "session.capabilities sent again")
        if self.session_id is None:
            self.session_id = frame.session_id
        elif frame.session_id != self.session_id:
            self.fail("one-session", index, f"session_id {frame.session_id} != {self.session_id}")
        if frame.seq != self.next_seq:
            self.fail("seq-contiguous", index, f"seq {frame.seq}, expected {self.next_seq}")
        self.next_seq = frame.seq + 1
        if self.closed_at is not None:
            self.fail("closed-last", index, f"{ftype} after session.closed")
        handler = getattr(self, "on_" + ftype.replace(".", "_"), None)
        if handler is not None:
            handler(index, payload)
        turn_id = getattr(payload, "turn_id", None)
        scoped = ftype.startswith(("agent.text", "agent.thinking", "tool.")) or ftype in (
            "session.usage",
        )
        if scoped and turn_id is not None and turn_id != self.open_turn:
            self.fail("turn-scope", index, f"{ftype} for turn {turn_id} outside it")

    def on_session_turn_start(self, index: int, payload: Any) -> None:
        if self.open_turn is not None:
            self.fail("one-prompt", index, f"turn {payload.turn_id} starts inside {self.open_turn}")
        self.open_turn = payload.turn_id
        self.turn_has_error = False
        self.tools_done.clear()  # invocation ids are the turn's own; agents reuse them

    def on_session_turn_end(self, index: int, payload: Any) -> None:
        if payload.turn_id != self.open_turn:
            self.fail("turn-pairing", index, f"end of {payload.turn_id}, open: {self.open_turn}")
        if payload.stop_reason == "error" and not self.turn_has_error:
            self.fail("error-before-end", index, "stop_reason error without agent.error first")
        for invocation_id in sorted(self.tools_open):
            self.fail("tool-pairing", index, f"tool call {invocation_id} has no result at turn end")
        self.tools_done |= self.tools_open
        self.tools_open.clear()
        for interaction_id, turn in list(self.open_interactions.items()):
            if turn == payload.turn_id:
                self.fail(
                    "interactions-resolved",
                    index,
                    f"interaction {interaction_id} not resolved before its turn ended",
                )
                del self.open_interactions[interaction_id]
        self.open_turn = None

    def on_agent_error(self, index: int, payload: Any) -> None:
        if self.open_turn is not None:
            self.turn_has_error = True

    def on_agent_interaction_request(self, index: int, payload: Any) -> None:
        if payload.interaction_id in self.open_interactions:
            self.fail("interaction-ids", index, f"{payload.interaction_id} requested twice")
        self.open_interactions[payload.interaction_id] = payload.turn_id

    def on_agent_interaction_resolved(self, index: int, payload: Any) -> None:
        interaction_id = payload.interaction_id
        if interaction_id in self.open_interactions:
            del self.open_interactions[interaction_id]
            self.resolved_interactions.add(interaction_id)
        else:
            again = "again" if interaction_id in self.resolved_interactions else "never requested"
            self.fail("interactions-resolved", index, f"{interaction_id} resolved but {again}")

    def on_session_error(self, index: int, payload: Any) -> None:
        if payload.error_code == SessionErrorCode.UNKNOWN_INTERACTION:
            self.pending_unknown_answers = max(0, self.pending_unknown_answers - 1)

    def on_tool_invoke_request(self, index: int, payload: Any) -> None:
        if payload.invocation_id in self.tools_open | self.tools_done:
            self.fail("tool-pairing", index, f"tool call {payload.invocation_id} started twice")
        self.tools_open.add(payload.invocation_id)

    def on_tool_invoke_stream(self, index: int, payload: Any) -> None:
        if payload.invocation_id not in self.tools_open:
            self.fail(
                "tool-pairing",
                index,
                f"output for tool call {payload.invocation_id} that is not running",
            )

    def on_tool_invoke_result(self, index: int, payload: Any) -> None:
        if payload.invocation_id in self.tools_done:
            self.fail("tool-pairing", index, f"second result for {payload.invocation_id}")
        self.tools_open.discard(payload.invocation_id)
        self.tools_done.add(payload.invocation_id)

    def on_session_closed(self, index: int, payload: Any) -> None:
        if self.open_turn is not None:
            self.fail("turn-pairing", index, f"session closed with turn {self.open_turn} open")
        for interaction_id in self.open_interactions:
            self.fail(
                "interactions-resolved", index, f"session closed with {interaction_id} unresolved"
            )
        self.open_interactions.clear()
        self.closed_at = index


class StreamChecker:
    """The invariant checker fed one frame at a time, for a stream watched as it
    arrives: :meth:`feed` returns the rules a frame breaks, :meth:`finish` those broken
    by where the stream stopped. :func:`check_frames` is this over a whole stream."""

    def __init__(self) -> None:
        self._checker = _Checker()
        self._index = -1

    def feed(self, raw: Envelope | dict[str, Any] | str | bytes) -> list[Violation]:
        """The rules ``raw`` breaks, given every frame fed before it."""
        checker = self._checker
        before = len(checker.violations)
        try:
            frame = _as_frame(raw)
        except (FrameError, ValueError) as exc:
            checker.fail("valid-frames", self._index + 1, str(exc))
            return checker.violations[before:]
        if getattr(frame, "type", "") in CONTROL_FRAME_TYPES:
            checker.control(self._index, frame)
        else:
            self._index += 1
            checker.client(self._index, frame)
        return checker.violations[before:]

    def finish(self, *, complete: bool = True) -> list[Violation]:
        """The rules broken by the stream ending here (``complete``: it should have
        ended with ``session.closed``)."""
        checker = self._checker
        before = len(checker.violations)
        index = self._index
        if index < 0:
            checker.fail("capabilities-first", 0, "no frames")
        if complete and checker.closed_at is None:
            checker.fail("closed-last", index, "the stream does not end with session.closed")
        for interaction_id in checker.open_interactions:
            checker.fail(
                "interactions-resolved", index, f"interaction {interaction_id} never resolved"
            )
        if checker.pending_unknown_answers:
            checker.fail(
                "interactions-resolved",
                index,
                f"{checker.pending_unknown_answers} answer(s) to unknown interactions not reported",
            )
        return checker.violations[before:]


def check_frames(
    frames: Iterable[Envelope | dict[str, Any] | str | bytes], *, complete: bool = True
) -> list[Violation]:
    """Every rule the stream breaks (empty when it keeps them all).

    ``frames`` are the Client→Master frames in order, or the transcript of both
    directions (control frames are recognised by type and used to see which
    interactions were answered). ``complete`` says the stream should end with
    ``session.closed``.
    """
    checker = StreamChecker()
    violations = [violation for raw in frames for violation in checker.feed(raw)]
    return violations + checker.finish(complete=complete)


def assert_valid_stream(
    frames: Iterable[Envelope | dict[str, Any] | str | bytes], *, complete: bool = True
) -> None:
    """Raise :class:`InvariantError` listing every broken rule."""
    violations = check_frames(frames, complete=complete)
    if violations:
        raise InvariantError(violations)
