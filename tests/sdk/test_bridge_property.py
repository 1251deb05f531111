"""Property: whatever order answers, timeouts, aborts and closes arrive in, the permission
callback returns, and it allows only when an explicit, well-formed allow came first."""

from __future__ import annotations

import uuid

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rawp_adapter_sdk import Allow, Deny, SdkAdapter
from rawp_adapter_sdk.testing import FunctionCore, ask_permission

from rawp_adapters.frames import ControlFrame, InteractionRequestFrame
from rawp_adapters.testing import SessionDriver, drive, never_answer

pytestmark = pytest.mark.anyio

ALLOWING = {"allow", "allow_edited"}
RESOLVING = ALLOWING | {"allow_garbled", "deny", "no_decision", "timeout", "abort", "close"}
NOT_RESOLVING = {"answer_unknown", "abort_unknown_turn"}
DENY_REASON = {
    "allow_garbled": "malformed",
    "deny": "refused",
    "no_decision": "malformed",
    "timeout": "timeout",
    "abort": "aborted",
    "close": "closed",
}


def control_frame(d: SessionDriver, event: str, interaction_id: str, turn_id: str) -> ControlFrame:
    control = d.session.control
    match event:
        case "allow":
            return control.allow(interaction_id)
        case "allow_edited":
            return control.respond(interaction_id, "allow", '{"command": "edited"}')
        case "allow_garbled":
            return control.respond(interaction_id, "allow", "{not json")
        case "deny":
            return control.deny(interaction_id)
        case "no_decision":
            return control.respond(interaction_id)
        case "timeout":
            return control.timeout(interaction_id)
        case "abort":
            return control.abort(turn_id)
        case "close":
            return control.end()
        case "answer_unknown":
            return control.allow(str(uuid.uuid4()))
        case "abort_unknown_turn":
            return control.abort(str(uuid.uuid4()))
    raise AssertionError(event)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    events=st.lists(st.sampled_from(sorted(RESOLVING | NOT_RESOLVING)), max_size=6),
    own_deadline_ms=st.sampled_from([60_000, 1]),
)
async def test_the_callback_always_returns_and_allows_only_after_an_explicit_allow_first(
    tmp_path_factory: pytest.TempPathFactory, events: list[str], own_deadline_ms: int
) -> None:
    core = FunctionCore(ask_permission("Bash", {"command": "call"}, call_id="call"))
    adapter = SdkAdapter.for_core(core, permission_timeout_ms=own_deadline_ms)
    workspace = tmp_path_factory.getbasetemp()
    async with drive(adapter, workspace=workspace, policy=never_answer, timeout=10) as d:
        start = await d.start_prompt("go")
        turn_id = start.payload.turn_id
        request = await d.wait_for(InteractionRequestFrame)
        for event in events:
            await d.send(control_frame(d, event, request.payload.interaction_id, turn_id))
            if event == "close":
                break  # a Master sends nothing after ending the session
        with anyio.fail_after(10):
            if not d.session.closed and "close" not in events:
                await d.end()
            await d.wait_turn(turn_id)
    decision = core.decisions["call"]  # the callback returned
    first = next((e for e in events if e in RESOLVING), "close")
    if own_deadline_ms == 1:
        # The adapter's own deadline may come before any of them: only deny is certain.
        assert isinstance(decision, Deny) or first in ALLOWING
    elif first in ALLOWING:
        assert isinstance(decision, Allow)
        assert (decision.updated_input is not None) == (first == "allow_edited")
    else:
        assert isinstance(decision, Deny)
        assert decision.reason == DENY_REASON[first]
