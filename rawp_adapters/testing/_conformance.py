"""A conformance run any adapter can be put through (third-party plugins included).

from rawp_adapters.testing import run_conformance

@pytest.mark.anyio
async def test_my_adapter_keeps_the_dps_rules(tmp_path):
    await run_conformance(lambda: MyAdapter.from_settings({...}), workspace=tmp_path)
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio

from rawp_adapters._adapter import Adapter
from rawp_adapters._frames import SessionCapabilitiesFrame, SessionErrorFrame, TurnStartFrame
from rawp_adapters.host import Policy, allow_all
from rawp_adapters.testing._driver import SessionDriver, drive


async def run_conformance(
    make_adapter: Callable[[], Adapter],
    *,
    workspace: str | Path,
    prompt: str = "Say hello.",
    long_prompt: str | None = None,
    policy: Policy = allow_all,
    timeout: float = 60.0,
) -> None:
    """Drive fresh sessions of the adapter through the protocol's rules; raise
    ``AssertionError`` on the first rule it breaks.

    ``long_prompt`` (a prompt the agent takes a while over) enables the abort and
    concurrent-prompt checks.
    """
    workspace = Path(await anyio.Path(workspace).resolve())
    async with drive(make_adapter(), workspace=workspace, policy=policy, timeout=timeout) as d:
        caps = await d.wait_for(SessionCapabilitiesFrame)
        assert d.frames[0] is caps, "session.capabilities must come first"
        features = caps.payload.features
        assert features.adapter_type == caps.payload.adapter_type
        turn = await d.prompt(prompt)
        assert turn.stop_reason in ("end_turn", "max_tokens", "refusal"), turn.stop_reason
        if not features.context_compaction:
            mark = len(d.frames)
            await d.send(d.control.compact())
            error = await d.wait_for(SessionErrorFrame, after=mark)
            assert error.payload.error_code == "UNSUPPORTED"
            assert not error.payload.fatal
        if not features.plan_mode:
            mark = len(d.frames)
            await d.send(d.control.switch_mode("plan"))
            error = await d.wait_for(SessionErrorFrame, after=mark)
            assert error.payload.error_code == "UNSUPPORTED"
        if long_prompt is not None:
            await _check_busy_rules(d, long_prompt, abort=features.abort)
        closed = await d.end()
        assert closed.payload.reason == "explicit", closed.payload
    # A session that is ended without ever being prompted closes cleanly too.
    async with drive(make_adapter(), workspace=workspace, policy=policy, timeout=timeout) as d:
        closed = await d.end()
        assert closed.payload.reason == "explicit", closed.payload


async def _check_busy_rules(d: SessionDriver, long_prompt: str, *, abort: bool) -> None:
    start = await d.start_prompt(long_prompt)
    mark = len(d.frames)
    await d.send(d.control.prompt("a second prompt while one is running"))
    error = await d.wait_for(SessionErrorFrame, after=mark)
    assert error.payload.error_code == "PROMPT_IN_PROGRESS"
    assert not error.payload.fatal
    assert not [f for f in d.frames[mark:] if isinstance(f, TurnStartFrame)], (
        "a prompt was started while another was in flight"
    )
    if abort:
        await d.send(d.control.abort(start.payload.turn_id))
        turn = await d.wait_turn(start.payload.turn_id)
        assert turn.stop_reason == "cancelled", turn.stop_reason
    else:
        await d.wait_turn(start.payload.turn_id)
