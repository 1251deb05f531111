"""A driver that plays the Master against a session, for tests and conformance runs."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path
from typing import Any, Generic, overload

import anyio
from typing_extensions import TypeVar

from rawp_adapters._adapter import Adapter
from rawp_adapters._frames import (
    AgentErrorFrame,
    ClientFrame,
    ControlFrame,
    Envelope,
    InteractionRequest,
    SessionClosedFrame,
    TurnEndFrame,
    TurnStartFrame,
)
from rawp_adapters._session import Session, SessionOptions, open_session
from rawp_adapters.host import Policy, Reply, SessionLike, allow_all, answer_interactions
from rawp_adapters.testing._invariants import assert_valid_stream

_SUMMARY_RUNS = 10
"""How many runs of frames of one type a timeout's message shows (the last ones)."""
_SUMMARY_ERRORS = 3
"""How many of the agent's errors a timeout's message quotes (the last ones)."""
_SUMMARY_ERROR_CHARS = 300
"""How much of each of those errors it quotes (the start)."""

F = TypeVar("F", bound=Envelope)
S = TypeVar("S", bound=SessionLike, default=Session)


@dataclass(frozen=True, slots=True)
class TurnRecord:
    """The frames of one turn, from its ``session.turn.start`` to its ``session.turn.end``."""

    frames: list[ClientFrame]

    @property
    def turn_id(self) -> str:
        return self.end.payload.turn_id

    @property
    def end(self) -> TurnEndFrame:
        last = self.frames[-1]
        assert isinstance(last, TurnEndFrame)
        return last

    @property
    def stop_reason(self) -> str:
        return self.end.payload.stop_reason

    @property
    def text(self) -> str:
        """Everything the agent said (the text deltas joined)."""
        return "".join(f.payload.text for f in self.frames if f.type == "agent.text.delta")

    @overload
    def of_type(self, frame_type: type[F]) -> list[F]: ...

    @overload
    def of_type(self, frame_type: str) -> list[Any]: ...

    def of_type(self, frame_type: type[F] | str) -> list[Any]:
        """The frames received so far of that type (a frame class or a type string)."""
        return _of_type(self.frames, frame_type)


def _anything(_: object) -> bool:
    return True


def _type_name(frame_type: type[Envelope] | str) -> str:
    if isinstance(frame_type, str):
        return frame_type
    default = frame_type.model_fields["type"].default
    return default if isinstance(default, str) else "any frame"


def _summary(frames: Sequence[ClientFrame]) -> str:
    """The types of ``frames`` in order, runs of one type counted, the last few only,
    and what the agent's last errors said."""
    runs = [(name, sum(1 for _ in run)) for name, run in groupby(f.type for f in frames)]
    shown = [name if n == 1 else f"{name} x{n}" for name, n in runs[-_SUMMARY_RUNS:]]
    if len(runs) > _SUMMARY_RUNS:
        shown.insert(0, "…")
    said = [
        repr(f.payload.message[:_SUMMARY_ERROR_CHARS])
        for f in frames
        if isinstance(f, AgentErrorFrame)
    ][-_SUMMARY_ERRORS:]
    errors = f"; the agent's errors: {', '.join(said)}" if said else ""
    return (", ".join(shown) or "nothing") + errors


def _of_type(frames: list[ClientFrame], frame_type: type[Envelope] | str) -> list[Any]:
    if isinstance(frame_type, str):
        return [f for f in frames if f.type == frame_type]
    return [f for f in frames if isinstance(f, frame_type)]


class SessionDriver(Generic[S]):
    """Plays the Master: sends control frames, records every frame both ways, and
    answers interactions by ``policy``. Every wait is bounded by ``timeout``.

    ``session`` is any :class:`SessionLike`: a local session (what :func:`drive` opens)
    or one served elsewhere, e.g. a :class:`rawp_adapters.remote.RemoteSession`."""

    def __init__(self, session: S, *, policy: Policy = allow_all, timeout: float = 30.0):
        self.session = session
        self.policy = policy
        self.timeout = timeout
        self.frames: list[ClientFrame] = []
        self.transcript: list[Envelope] = []
        self._changed = anyio.Event()
        self._done = anyio.Event()

    @property
    def control(self) -> Any:
        return self.session.control

    async def run(self) -> None:
        """Collect frames until ``session.closed`` (started by :func:`drive`)."""
        try:
            await answer_interactions(
                self.session, self._policy, on_frame=self._record, send=self.send
            )
        finally:
            self._done.set()
            self._changed.set()

    def _policy(self, request: InteractionRequest) -> Reply | Awaitable[Reply | None] | None:
        return self.policy(request)  # looked up per request: a test may swap the policy

    def _record(self, frame: ClientFrame) -> None:
        self.frames.append(frame)
        self.transcript.append(frame)
        self._changed.set()
        self._changed = anyio.Event()

    async def send(self, frame: ControlFrame) -> None:
        self.transcript.append(frame)
        await self.session.send(frame)

    @overload
    async def wait_for(
        self,
        frame_type: type[F],
        *,
        where: Callable[[Any], bool] = ...,
        after: int = ...,
        timeout: float | None = ...,
    ) -> F: ...

    @overload
    async def wait_for(
        self,
        frame_type: str,
        *,
        where: Callable[[Any], bool] = ...,
        after: int = ...,
        timeout: float | None = ...,
    ) -> Any: ...

    async def wait_for(
        self,
        frame_type: type[F] | str,
        *,
        where: Callable[[Any], bool] = _anything,
        after: int = 0,
        timeout: float | None = None,
    ) -> Any:
        """The first frame at index ``>= after`` of that type (class or type string) that
        matches ``where``; raises ``TimeoutError`` saying what it waited for and what
        came instead if none comes in time (or before the session closed)."""

        def matches(frame: ClientFrame) -> bool:
            kind = (
                frame.type == frame_type
                if isinstance(frame_type, str)
                else isinstance(frame, frame_type)
            )
            return kind and where(frame)

        seconds = self.timeout if timeout is None else timeout
        index = after
        with anyio.move_on_after(seconds):
            while True:
                while index < len(self.frames):
                    frame = self.frames[index]
                    index += 1
                    if matches(frame):
                        return frame
                if self._done.is_set():
                    break
                await self._changed.wait()
        what = _type_name(frame_type)
        raise self._not_seen(what if where is _anything else f"a matching {what}", after, seconds)

    @overload
    async def wait_count(
        self, frame_type: type[F], count: int, *, timeout: float | None = ...
    ) -> list[F]: ...

    @overload
    async def wait_count(
        self, frame_type: str, count: int, *, timeout: float | None = ...
    ) -> list[Any]: ...

    async def wait_count(
        self, frame_type: type[F] | str, count: int, *, timeout: float | None = None
    ) -> list[Any]:
        """Wait until ``count`` frames of that type have arrived; return them all."""
        seconds = self.timeout if timeout is None else timeout
        with anyio.move_on_after(seconds):
            while len(self.of_type(frame_type)) < count and not self._done.is_set():
                await self._changed.wait()
        found = self.of_type(frame_type)
        if len(found) >= count:
            return found
        raise self._not_seen(f"{count} {_type_name(frame_type)} (got {len(found)})", 0, seconds)

    def _not_seen(self, what: str, after: int, seconds: float) -> TimeoutError:
        """The error of a wait for ``what`` that ended without it: what came instead."""
        why = "the session closed" if self._done.is_set() else f"{seconds:g} s passed"
        return TimeoutError(
            f"waited for {what} from frame {after}, but {why}; "
            f"what came from frame {after}: {_summary(self.frames[after:])}"
        )

    async def start_prompt(self, text: str, **kwargs: Any) -> TurnStartFrame:
        """Send a prompt and wait for its turn to start."""
        mark = len(self.frames)
        frame = self.control.prompt(text, **kwargs)
        await self.send(frame)
        prompt_id = frame.payload.prompt_id
        return await self.wait_for(
            TurnStartFrame, where=lambda f: f.payload.prompt_id == prompt_id, after=mark
        )

    async def wait_turn(self, turn_id: str, *, timeout: float | None = None) -> TurnRecord:
        end = await self.wait_for(
            TurnEndFrame, where=lambda f: f.payload.turn_id == turn_id, timeout=timeout
        )
        start = next(
            i
            for i, f in enumerate(self.frames)
            if isinstance(f, TurnStartFrame) and f.payload.turn_id == turn_id
        )
        return TurnRecord(self.frames[start : self.frames.index(end) + 1])

    async def prompt(self, text: str, *, timeout: float | None = None, **kwargs: Any) -> TurnRecord:
        """Run one prompt to its ``session.turn.end`` and return the turn's frames."""
        start = await self.start_prompt(text, **kwargs)
        return await self.wait_turn(start.payload.turn_id, timeout=timeout)

    async def end(self, *, timeout: float | None = None) -> SessionClosedFrame:
        """Send ``control.session.end`` and wait for ``session.closed``."""
        if not self.session.closed:
            await self.send(self.control.end())
        return await self.wait_for(SessionClosedFrame, timeout=timeout)

    async def closed(self, *, timeout: float | None = None) -> SessionClosedFrame:
        return await self.wait_for(SessionClosedFrame, timeout=timeout)

    @overload
    def of_type(self, frame_type: type[F]) -> list[F]: ...

    @overload
    def of_type(self, frame_type: str) -> list[Any]: ...

    def of_type(self, frame_type: type[F] | str) -> list[Any]:
        """The frames received so far of that type (a frame class or a type string)."""
        return _of_type(self.frames, frame_type)

    def assert_valid(self, *, complete: bool = True) -> None:
        assert_valid_stream(self.transcript, complete=complete)


@asynccontextmanager
async def drive(
    adapter: Adapter,
    *,
    workspace: str | Path,
    policy: Policy = allow_all,
    timeout: float = 30.0,
    options: SessionOptions | None = None,
    check: bool = True,
) -> AsyncIterator[SessionDriver[Session]]:
    """Open a session on ``adapter`` and yield a :class:`SessionDriver` for it.

    On exit the session is ended (bounded by ``timeout``) and, with ``check``, the
    whole transcript is checked against the DPS invariants.
    """
    async with (
        open_session(adapter, workspace=workspace, options=options) as session,
        drive_session(session, policy=policy, timeout=timeout) as driver,
    ):
        yield driver
    if check:
        driver.assert_valid()


@asynccontextmanager
async def drive_session(
    session: S, *, policy: Policy = allow_all, timeout: float = 30.0
) -> AsyncIterator[SessionDriver[S]]:
    """Yield a :class:`SessionDriver` for an open ``session``; on exit the session is
    closed and read to its ``session.closed`` (bounded by ``timeout``)."""
    driver = SessionDriver(session, policy=policy, timeout=timeout)
    async with anyio.create_task_group() as tg:
        tg.start_soon(driver.run)
        try:
            yield driver
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(timeout):
                await session.close()
                await driver._done.wait()
            tg.cancel_scope.cancel()
