"""A subject's ``open_session`` hook: the kit checks the sessions it opens, whatever
serves them, instead of opening sessions of its own."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from rawp_adapters import Adapter, ControlFrames, Session, SessionOptions, open_session
from rawp_adapters.frames import ClientFrame, ControlFrame
from rawp_adapters.testing import (
    ConformanceSubject,
    FunctionAdapter,
    Prompts,
    check_adapter,
    say,
)
from tests.conformance.test_broken_adapters import ends_its_turn_itself

pytestmark = pytest.mark.anyio


class RelayedSession:
    """A local session seen through a relay, as a Master sees a session served elsewhere:
    every frame it reads and every control frame it sends passes through here."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self.read: list[ClientFrame] = []
        self.sent: list[ControlFrame] = []

    @property
    def session_id(self) -> str:
        return self._session.session_id

    @property
    def control(self) -> ControlFrames:
        return self._session.control

    @property
    def closed(self) -> bool:
        return self._session.closed

    def __aiter__(self) -> AsyncIterator[ClientFrame]:
        return self._relay()

    async def _relay(self) -> AsyncIterator[ClientFrame]:
        async for frame in self._session:
            self.read.append(frame)
            yield frame

    async def send(self, frame: ControlFrame) -> None:
        self.sent.append(frame)
        await self._session.send(frame)

    async def close(self) -> None:
        await self._session.close()


@dataclass
class Relay:
    """Opens every session through a :class:`RelayedSession` and keeps them."""

    opened: list[tuple[Adapter, SessionOptions, RelayedSession]] = field(default_factory=list)

    @asynccontextmanager
    async def open_session(
        self, adapter: Adapter, *, workspace: Path, options: SessionOptions
    ) -> AsyncIterator[RelayedSession]:
        async with open_session(adapter, workspace=workspace, options=options) as session:
            relayed = RelayedSession(session)
            self.opened.append((adapter, options, relayed))
            yield relayed


async def test_a_subject_that_opens_its_own_sessions_is_checked_through_them() -> None:
    built: list[Adapter] = []

    def make_adapter() -> Adapter:
        built.append(FunctionAdapter(say("hi")))
        return built[-1]

    relay = Relay()
    subject = ConformanceSubject(
        make_adapter,
        prompts=Prompts(answer="hello"),
        permission_timeout_ms=250,
        timeout=10,
        open_session=relay.open_session,
    )
    report = await check_adapter(subject, rules=["one-turn", "explicit-end"])

    assert report.ok, report.format()
    assert [adapter for adapter, _, _ in relay.opened] == built
    assert len(built) == 3  # one-turn opens one session, explicit-end two
    assert {options.interaction_timeout_ms for _, options, _ in relay.opened} == {250}
    sessions = [session for _, _, session in relay.opened]
    prompt, end = "control.prompt.request", "control.session.end"
    assert [[f.type for f in s.sent] for s in sessions] == [[prompt, end], [end], [prompt, end]]
    assert all(s.read[0].type == "session.capabilities" for s in sessions)
    assert all(s.read[-1].type == "session.closed" for s in sessions)


async def test_the_kits_timeout_bounds_each_sessions_start() -> None:
    """An agent that needs more than the session's default minute to start (a loaded
    machine, a first start that sets up its home) passes when the kit is given longer."""
    relay = Relay()
    subject = ConformanceSubject(
        lambda: FunctionAdapter(say("hi")),
        prompts=Prompts(answer="hello"),
        timeout=180,
        open_session=relay.open_session,
    )
    report = await check_adapter(subject, rules=["one-turn"])

    assert report.ok, report.format()
    assert [options.start_timeout for _, options, _ in relay.opened] == [180]


async def test_the_kit_judges_the_sessions_the_subject_opens_not_the_adapter_it_built() -> None:
    @asynccontextmanager
    async def open_a_broken_session(
        adapter: Adapter, *, workspace: Path, options: SessionOptions
    ) -> AsyncIterator[Session]:
        broken = FunctionAdapter(ends_its_turn_itself)
        async with open_session(broken, workspace=workspace, options=options) as session:
            yield session

    well_behaved = ConformanceSubject(lambda: FunctionAdapter(say("hi")), timeout=10)
    served_broken = ConformanceSubject(
        lambda: FunctionAdapter(say("hi")), timeout=10, open_session=open_a_broken_session
    )

    assert (await check_adapter(well_behaved, rules=["one-turn"])).ok
    (result,) = (await check_adapter(served_broken, rules=["one-turn"])).results
    assert result.status == "failed"
    assert "[runtime-owned-frames] the adapter emitted session.turn.end" in result.detail
