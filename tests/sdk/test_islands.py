"""The asyncio island SDK cores run their asyncio-only SDKs on (rawp_adapter_sdk.islands)."""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import anyio.lowlevel
import pytest
import sniffio
from rawp_adapter_sdk.islands import (
    STOP_GRACE_S,
    SWITCH_INTERVAL_S,
    AsyncioIsland,
    Emit,
    Finished,
    Outbox,
)

pytestmark = pytest.mark.anyio

WAIT_S = 10


@asynccontextmanager
async def island(own_thread: bool = False) -> AsyncIterator[AsyncioIsland]:
    made = AsyncioIsland("test-island", own_thread=own_thread)
    try:
        yield made
    finally:
        await made.stop()


def island_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "test-island"]


async def test_on_asyncio_the_sdk_runs_on_the_sessions_loop_and_on_trio_in_a_thread_that_ends(
    anyio_backend: str,
) -> None:
    session_thread = threading.get_ident()

    async def where() -> int:
        return threading.get_ident()

    async with island() as sdk:
        ran_on = await sdk.call(where)
        assert sdk.in_thread == (anyio_backend == "trio")
        assert (ran_on == session_thread) == (anyio_backend == "asyncio")
    assert island_threads() == []


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # the session's own loop is asyncio's
async def test_on_the_sessions_own_loop_a_job_runs_from_the_next_step_of_the_loop() -> None:
    """Started at once, not by a callback that would then start it a step later: each
    step of the loop is time a Master's answer waits for before the SDK resumes."""
    ran = threading.Event()

    async def job() -> None:
        ran.set()

    async with island() as sdk:
        sdk.submit(job())
        await asyncio.sleep(0)  # one step of the loop
        assert ran.is_set()


async def test_own_thread_runs_the_sdk_in_a_thread_even_on_asyncio() -> None:
    async def where() -> int:
        return threading.get_ident()

    async with island(own_thread=True) as sdk:
        assert await sdk.call(where) != threading.get_ident()
        assert len(island_threads()) == 1
    assert island_threads() == []


async def test_the_sdk_sees_asyncio_not_the_sessions_library() -> None:
    async def library() -> str:
        return sniffio.current_async_library()

    async with island() as sdk:
        assert await sdk.call(library) == "asyncio"


async def test_a_jobs_items_reach_the_session_in_order_then_its_result() -> None:
    async def job(emit: Emit[int]) -> str:
        for i in range(1000):
            emit(i)
            if i % 100 == 0:
                await asyncio.sleep(0)
        return "done"

    async with island() as sdk:
        items = [item async for item in sdk.stream(job)]
    assert items[:-1] == list(range(1000))
    assert items[-1] == Finished(value="done")


async def test_what_a_job_raises_is_its_finished_item_and_what_a_call_raises() -> None:
    async def job(emit: Emit[int]) -> None:
        emit(1)
        raise ValueError("the SDK failed")

    async def fails() -> None:
        raise ValueError("the SDK failed")

    async with island() as sdk:
        items = [item async for item in sdk.stream(job)]
        with pytest.raises(ValueError, match="the SDK failed"):
            await sdk.call(fails)
    assert items[0] == 1
    assert isinstance(items[1], Finished)
    assert isinstance(items[1].error, ValueError)


async def test_items_put_from_any_thread_reach_the_session_in_order_and_the_last_is_told() -> None:
    outbox: Outbox[int] = Outbox()

    def sdk_reader() -> None:
        for i in range(500):
            outbox.put(i)
        outbox.put_last(-1)

    threading.Thread(target=sdk_reader).start()
    received: list[int] = []
    with anyio.fail_after(WAIT_S):
        async for item in outbox.receive:
            received.append(item)
            if item == -1:
                break
        await outbox.last.wait()
    outbox.close()
    assert received == [*range(500), -1]


async def test_a_cancelled_call_cancels_the_sdks_job_and_waits_for_it_to_end() -> None:
    started: Outbox[str] = Outbox()
    ended = threading.Event()

    async def forever() -> None:
        started.put("started")
        try:
            await asyncio.sleep(3600)
        finally:
            await asyncio.sleep(0.1)  # an SDK whose cleanup takes a while
            ended.set()

    async with island() as sdk:
        with anyio.fail_after(WAIT_S):
            async with anyio.create_task_group() as tg:
                tg.start_soon(sdk.call, forever)
                await started.receive.receive()
                tg.cancel_scope.cancel()
        assert ended.is_set()  # before the caller's cancellation returned
    started.close()


async def test_a_stream_left_early_cancels_its_job_and_waits_for_it_to_end() -> None:
    ended = threading.Event()

    async def job(emit: Emit[int]) -> None:
        try:
            emit(1)
            await asyncio.sleep(3600)
        finally:
            ended.set()

    async with island() as sdk:
        stream = sdk.stream(job)
        with anyio.fail_after(STOP_GRACE_S):
            assert await stream.__anext__() == 1
            await stream.aclose()
        assert ended.is_set()


async def test_stop_cancels_the_jobs_still_running() -> None:
    started: Outbox[str] = Outbox()
    ended = threading.Event()

    async def forever() -> None:
        started.put("started")
        try:
            await asyncio.sleep(3600)
        finally:
            ended.set()

    sdk = AsyncioIsland("test-island")
    sdk.submit(forever())
    with anyio.fail_after(WAIT_S):
        await started.receive.receive()
        await sdk.stop()
    started.close()
    assert ended.is_set()
    assert island_threads() == []


async def test_the_sdk_calls_the_session_back_on_the_sessions_loop() -> None:
    session_thread = threading.get_ident()

    async def on_session() -> tuple[int, str]:
        await anyio.lowlevel.checkpoint()
        return threading.get_ident(), sniffio.current_async_library()

    async with island(own_thread=True) as sdk:

        async def job() -> tuple[int, str]:
            return await sdk.on_host(on_session)

        thread, library = await sdk.call(job)
    assert thread == session_thread
    assert library == sniffio.current_async_library()


async def test_the_switch_interval_is_lowered_while_an_island_thread_runs() -> None:
    before = sys.getswitchinterval()
    sys.setswitchinterval(0.005)  # the interpreter's default
    try:
        async with island(own_thread=True), island(own_thread=True):
            assert sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL_S, rel=0.01)
        assert sys.getswitchinterval() == 0.005
        async with island(own_thread=True):  # and again, from where the first left it
            assert sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL_S, rel=0.01)
        assert sys.getswitchinterval() == 0.005
    finally:
        sys.setswitchinterval(before)


def is_part(item: str) -> bool:
    return item.startswith("part")


async def busy_until(done: threading.Event, at_most_s: float) -> bool:
    """Keep the island's loop from idling until ``done`` is set (at most ``at_most_s``):
    whether it was set."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + at_most_s
    while not done.is_set() and loop.time() < deadline:  # noqa: ASYNC110 (busy on purpose)
        await asyncio.sleep(0)
    return done.is_set()


async def test_parts_of_a_stream_wait_while_the_island_works_and_cross_with_what_follows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Parts put on an island's thread cross once it idles, not while it works; anything
    else put after them takes them along at once, in order."""
    monkeypatch.setattr("rawp_adapter_sdk.islands.HOLD_AT_MOST_S", 60.0)
    seen: list[str] = []
    parts_seen, result_seen = threading.Event(), threading.Event()

    async def job(emit: Emit[str]) -> tuple[bool, bool]:
        emit("part 1")
        emit("part 2")
        parts_crossed = await busy_until(parts_seen, at_most_s=0.2)
        emit("tool result")
        result_crossed = await busy_until(result_seen, at_most_s=WAIT_S)
        return parts_crossed, result_crossed

    async def watch() -> Finished[tuple[bool, bool]]:
        async for item in sdk.stream(job, may_wait=is_part):
            if isinstance(item, Finished):
                return item
            seen.append(item)
            (result_seen if item == "tool result" else parts_seen).set()
        raise AssertionError("the stream ended without its Finished item")

    async with island(own_thread=True) as sdk:
        with anyio.fail_after(WAIT_S):
            finished = await watch()
    assert seen == ["part 1", "part 2", "tool result"]
    assert finished.value == (False, True)  # the parts waited; the result took them along


async def test_parts_put_before_the_sdk_calls_the_session_reach_it_before_the_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("rawp_adapter_sdk.islands.HOLD_AT_MOST_S", 60.0)
    outbox: Outbox[str] = Outbox(may_wait=is_part)
    called = threading.Event()

    async with island(own_thread=True) as sdk:

        async def on_session() -> int:
            called.set()
            return outbox.receive.statistics().current_buffer_used

        async def job() -> int:
            busy = asyncio.create_task(busy_until(called, at_most_s=WAIT_S))  # never idle
            outbox.put("part 1")
            delivered = await sdk.on_host(on_session)
            await busy
            return delivered

        with anyio.fail_after(WAIT_S):
            delivered_before_the_call = await sdk.call(job)
            assert await outbox.receive.receive() == "part 1"
    outbox.close()
    assert delivered_before_the_call == 1
