"""Operations run in the order the Master sent them: a prompt or a compaction sent
after a mode switch runs in the mode it asked for."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import anyio
import pytest

from rawp_adapters import Adapter, AdapterSettings, CloseResult, SessionContext, Turn, TurnResult
from rawp_adapters.frames import Features, Mode
from rawp_adapters.testing import drive

pytestmark = pytest.mark.anyio


class SlowSwitcher(Adapter):
    """Switching mode takes until the test releases it; every call is logged."""

    adapter_type: ClassVar[str] = "slow-switcher"

    def __init__(self) -> None:
        super().__init__(AdapterSettings())
        self.calls: list[str] = []
        self.switching = anyio.Event()
        self.release = anyio.Event()

    @property
    def features(self) -> Features:
        return Features(adapter_type=self.adapter_type, plan_mode=True, context_compaction=True)

    async def start(self, ctx: SessionContext) -> None:
        del ctx

    async def switch_mode(self, mode: Mode) -> None:
        self.calls.append(f"switch {mode} started")
        self.switching.set()
        await self.release.wait()
        self.calls.append(f"switch {mode} done")

    async def prompt(self, turn: Turn) -> TurnResult:
        self.calls.append(f"prompt {turn.request.text}")
        return TurnResult()

    async def compact(self, custom_instructions: str | None) -> None:
        self.calls.append("compact")

    async def close(self) -> CloseResult:
        return CloseResult()


async def test_a_prompt_sent_after_a_mode_switch_runs_once_the_switch_is_done(
    tmp_path: Path,
) -> None:
    adapter = SlowSwitcher()
    async with drive(adapter, workspace=tmp_path) as d:
        await d.send(d.control.switch_mode("plan"))
        await d.send(d.control.switch_mode("default"))
        start = await d.start_prompt("go")
        await adapter.switching.wait()
        assert adapter.calls == ["switch plan started"]
        adapter.release.set()
        await d.wait_turn(start.payload.turn_id)
    assert adapter.calls == [
        "switch plan started",
        "switch plan done",
        "switch default started",
        "switch default done",
        "prompt go",
    ]


async def test_a_compaction_sent_after_a_mode_switch_waits_for_it(tmp_path: Path) -> None:
    adapter = SlowSwitcher()
    async with drive(adapter, workspace=tmp_path) as d:
        await d.send(d.control.switch_mode("plan"))
        await d.send(d.control.compact())
        compacting = await d.wait_for(
            "agent.state.changed", where=lambda f: f.payload.state == "compacting"
        )
        await adapter.switching.wait()
        adapter.release.set()
        await d.wait_for(
            "agent.state.changed",
            where=lambda f: f.payload.state == "idle",
            after=d.frames.index(compacting),
        )
    assert adapter.calls == ["switch plan started", "switch plan done", "compact"]
