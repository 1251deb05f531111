"""Commands and their answers: ids, id-less answers, duplicates, bounds."""

from __future__ import annotations

import json

import anyio
import pytest
from rawp_adapter_process._commands import AgentGone, CommandChannel
from rawp_adapter_process._wire import Response

pytestmark = pytest.mark.anyio


class Agent:
    """Records what the channel writes and answers it on request."""

    def __init__(self) -> None:
        self.written: list[dict[str, object]] = []
        self.wrote = anyio.Event()

    async def write(self, data: bytes) -> None:
        self.written.append(json.loads(data))
        self.wrote.set()

    async def next_command(self) -> dict[str, object]:
        while not self.written:
            self.wrote = anyio.Event()
            await self.wrote.wait()
        return self.written.pop(0)


async def test_an_answer_is_matched_to_its_command_by_id() -> None:
    agent = Agent()
    channel = CommandChannel(agent.write)
    async with anyio.create_task_group() as tg:
        answers: list[Response] = []

        async def ask() -> None:
            answers.append(await channel.request({"type": "get_state"}, timeout=5))

        tg.start_soon(ask)
        command = await agent.next_command()
        assert command["type"] == "get_state"
        assert channel.on_response(Response(id=str(command["id"]), success=True))
    assert [a.success for a in answers] == [True]


@pytest.mark.parametrize(
    "answer",
    [
        Response(command="parse", success=False, error="Failed to parse command: boom"),
        Response(command="compact", success=False, error="Unknown command: compact"),
    ],
    ids=["parse", "by-name"],
)
async def test_an_answer_without_an_id_goes_to_the_oldest_open_command_it_fits(
    answer: Response,
) -> None:
    agent = Agent()
    channel = CommandChannel(agent.write)
    async with anyio.create_task_group() as tg:
        answers: list[Response] = []

        async def ask() -> None:
            answers.append(await channel.request({"type": "compact"}, timeout=5))

        tg.start_soon(ask)
        await agent.next_command()
        assert not channel.on_response(Response(command="get_state", success=True))
        assert channel.on_response(answer)
    assert answers == [answer]


async def test_later_answers_to_a_command_go_to_its_late_handler_until_forgotten() -> None:
    agent = Agent()
    channel = CommandChannel(agent.write)
    late: list[Response] = []
    command_id = channel.new_id()
    async with anyio.create_task_group() as tg:

        async def ask() -> None:
            await channel.request(
                {"type": "prompt"}, timeout=5, command_id=command_id, on_late=late.append
            )

        tg.start_soon(ask)
        await agent.next_command()
        channel.on_response(Response(id=command_id, success=True))
    failure = Response(id=command_id, success=False, error="busy")
    assert channel.on_response(failure)
    assert late == [failure]
    channel.forget(command_id)
    assert not channel.on_response(failure)


async def test_an_unanswered_command_times_out() -> None:
    channel = CommandChannel(Agent().write)
    with pytest.raises(TimeoutError):
        await channel.request({"type": "get_state"}, timeout=0.05)


async def test_when_the_agent_is_gone_every_waiting_command_fails_at_once() -> None:
    agent = Agent()
    channel = CommandChannel(agent.write)
    failures: list[str] = []

    async def ask() -> None:
        try:
            await channel.request({"type": "get_state"}, timeout=30)
        except AgentGone as exc:
            failures.append(str(exc))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(ask)
            tg.start_soon(ask)
            await agent.next_command()
            await agent.next_command()
            channel.fail_all("exited")
    assert failures == ["exited", "exited"]
    with pytest.raises(AgentGone):
        await channel.request({"type": "get_state"}, timeout=1)
