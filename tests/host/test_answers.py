"""answer_interactions answers a session's questions with a policy, sync or async."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from rawp_adapters import ClientFrame, ControlFrame, open_session
from rawp_adapters.frames import (
    InteractionRequest,
    InteractionResolvedFrame,
    TextDoneFrame,
    TurnEndFrame,
)
from rawp_adapters.host import (
    Policy,
    Reply,
    allow_all,
    answer,
    answer_interactions,
    deny_all,
    never_answer,
)
from rawp_adapters.testing import FunctionAdapter, TurnFunction, assert_valid_stream
from tests.host.asking import asking

pytestmark = pytest.mark.anyio

WAIT = 20.0


class Turn:
    """One prompt run to its end with answer_interactions; the session then closes."""

    def __init__(self) -> None:
        self.frames: list[ClientFrame] = []
        self.sent: list[ControlFrame] = []
        self.transcript: list[ClientFrame | ControlFrame] = []

    async def run(self, workspace: Path, script: TurnFunction, policy: Policy) -> Turn:
        async with (
            open_session(FunctionAdapter(script), workspace=workspace) as session,
            anyio.create_task_group() as tg,
        ):

            def on_frame(frame: ClientFrame) -> None:
                self.frames.append(frame)
                self.transcript.append(frame)
                if isinstance(frame, TurnEndFrame):
                    tg.start_soon(session.close)

            async def send(frame: ControlFrame) -> None:
                self.sent.append(frame)
                self.transcript.append(frame)
                await session.send(frame)

            await session.send(session.control.prompt("go"))
            with anyio.fail_after(WAIT):
                await answer_interactions(session, policy, on_frame=on_frame, send=send)
        return self

    @property
    def said(self) -> str:
        [done] = [f for f in self.frames if isinstance(f, TextDoneFrame)]
        return done.payload.text

    @property
    def resolved(self) -> tuple[str, str]:
        [frame] = [f for f in self.frames if isinstance(f, InteractionResolvedFrame)]
        return frame.payload.outcome, frame.payload.decided_by


async def allow_large_later(request: InteractionRequest) -> Reply:
    await anyio.lowlevel.checkpoint()
    return Reply.allow("large")


@pytest.mark.parametrize(
    ("kind", "policy", "said", "resolved"),
    [
        ("PERMISSION", allow_all, "allow:answered:None", ("allowed", "master")),
        ("PERMISSION", deny_all, "deny:answered:None", ("denied", "master")),
        ("SELECT", allow_all, "allow:answered:small", ("allowed", "master")),
        ("SELECT", allow_large_later, "allow:answered:large", ("allowed", "master")),
        (
            "PERMISSION",
            lambda _: Reply(timeout=True),
            "deny:timeout:None",
            ("timed_out", "master_timeout"),
        ),
    ],
    ids=["sync-allow", "sync-deny", "sync-select", "async-select", "timeout-reply"],
)
async def test_a_sync_or_async_policy_decides_what_the_agent_is_told(
    tmp_path: Path, kind: str, policy: Policy, said: str, resolved: tuple[str, str]
) -> None:
    turn = await Turn().run(tmp_path, asking(kind), policy)
    assert turn.said == said
    assert turn.resolved == resolved
    assert len(turn.sent) == 1
    assert_valid_stream(turn.transcript)


async def test_no_answer_leaves_the_request_to_its_deadline_and_it_is_denied(
    tmp_path: Path,
) -> None:
    turn = await Turn().run(tmp_path, asking(timeout_ms=50), never_answer)
    assert turn.said == "deny:timeout:None"
    assert turn.resolved == ("timed_out", "deadline")
    assert turn.sent == []


async def test_a_question_resolved_without_the_policy_stops_being_asked(tmp_path: Path) -> None:
    stopped = anyio.Event()

    async def ask_forever(request: InteractionRequest) -> Reply:
        try:
            await anyio.Event().wait()
        finally:
            stopped.set()
        raise AssertionError("never answered")

    adapter = FunctionAdapter(asking(timeout_ms=50))
    async with (
        open_session(adapter, workspace=tmp_path) as session,
        anyio.create_task_group() as tg,
    ):

        async def close_once_stopped() -> None:
            await stopped.wait()  # the session stays open until the asking stopped
            await session.close()

        tg.start_soon(close_once_stopped)
        await session.send(session.control.prompt("go"))
        with anyio.fail_after(WAIT):
            await answer_interactions(session, ask_forever)


async def test_every_frame_reaches_on_frame_in_order_up_to_session_closed(
    tmp_path: Path,
) -> None:
    turn = await Turn().run(tmp_path, asking(), allow_all)
    assert [f.seq for f in turn.frames] == list(range(1, len(turn.frames) + 1))
    assert turn.frames[-1].type == "session.closed"


async def test_answer_says_whether_a_reply_was_sent(tmp_path: Path) -> None:
    request = InteractionRequest(interaction_id="i1", interaction_type="CONFIRM", timeout_ms=1000)
    async with open_session(FunctionAdapter(), workspace=tmp_path) as session:
        assert not await answer(session, request, never_answer)
        assert await answer(session, request, deny_all)  # unknown: reported, but sent
        await session.close()
        assert not await answer(session, request, allow_all)
