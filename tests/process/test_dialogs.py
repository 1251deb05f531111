"""Agent dialogs (extension_ui_request) as DPS interactions, and the answers (sans-IO)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from rawp_adapter_process._dialogs import PERMISSION_TITLE, Dialog, interpret
from rawp_adapter_process._wire import ToolCallInfo, UiRequest

from rawp_adapters import InteractionOutcome

ALLOW = InteractionOutcome(decision="allow", reason="answered")
DENY = InteractionOutcome(decision="deny", reason="answered")
TIMEOUT = InteractionOutcome(decision="deny", reason="timeout")


def no_tool(name: str) -> ToolCallInfo | None:
    return None


def dialog(**fields: Any) -> Dialog:
    request = UiRequest(id="d1", **fields)
    result = interpret(request, timeout_ms=60_000, claim_tool=no_tool)
    assert result is not None
    return result


def answer(d: Dialog, outcome: InteractionOutcome) -> dict[str, Any]:
    response = d.response(outcome)
    assert (response.pop("type"), response.pop("id")) == ("extension_ui_response", "d1")
    return response


def test_the_bundled_extensions_confirm_is_a_permission_with_machine_readable_context() -> None:
    details = {"tool_name": "bash", "tool_call_id": "c1", "tool_input": {"command": "make"}}
    d = dialog(method="confirm", title=PERMISSION_TITLE, message=json.dumps(details))
    assert d.interaction_type == "PERMISSION"
    assert d.context is not None
    assert (d.context.tool_name, d.context.tool_call_id) == ("bash", "c1")
    assert d.context.tool_input == {"command": "make"}
    assert (d.title, d.message) == ("Allow bash?", "make")
    assert answer(d, ALLOW) == {"confirmed": True}
    assert answer(d, DENY) == {"confirmed": False}
    assert answer(d, TIMEOUT) == {"confirmed": False}


def test_an_allow_that_edits_the_tool_input_is_a_denial() -> None:
    details = {"tool_name": "bash", "tool_call_id": "c1", "tool_input": {"command": "rm"}}
    d = dialog(method="confirm", title=PERMISSION_TITLE, message=json.dumps(details))
    edited = InteractionOutcome(decision="allow", reason="answered", value='{"command":"ls"}')
    assert answer(d, edited) == {"confirmed": False}


def test_a_permission_title_with_unreadable_details_is_a_plain_confirm() -> None:
    d = dialog(method="confirm", title=PERMISSION_TITLE, message="not json")
    assert d.interaction_type == "CONFIRM"


def test_omps_approval_select_is_a_permission_for_the_claimed_tool_call() -> None:
    claimed: list[str] = []

    def claim(name: str) -> ToolCallInfo | None:
        claimed.append(name)
        return ToolCallInfo(id="call_1", name=name, arguments={"command": "ls -la"})

    request = UiRequest(
        id="d1",
        method="select",
        title="Allow tool: bash\nCommand: ls -la",
        options=["Approve", "Deny"],
    )
    d = interpret(request, timeout_ms=60_000, claim_tool=claim)
    assert d is not None
    assert claimed == ["bash"]
    assert d.interaction_type == "PERMISSION"
    assert d.context is not None
    assert (d.context.tool_name, d.context.tool_call_id) == ("bash", "call_1")
    assert d.context.tool_input == {"command": "ls -la"}
    assert d.message == "Command: ls -la"
    assert answer(d, ALLOW) == {"value": "Approve"}
    assert answer(d, TIMEOUT) == {"value": "Deny"}


@pytest.mark.parametrize(
    ("fields", "kind", "allowed", "denied"),
    [
        ({"method": "confirm", "title": "Sure?", "message": "It is big"}, "CONFIRM",
         {"confirmed": True}, {"confirmed": False}),
        ({"method": "select", "title": "Pick", "options": ["a", "b"]}, "SELECT",
         {"value": "b"}, {"cancelled": True}),
        ({"method": "input", "title": "Name?", "placeholder": "you"}, "INPUT",
         {"value": "b"}, {"cancelled": True}),
        ({"method": "editor", "title": "Edit", "prefill": "text"}, "INPUT",
         {"value": "b"}, {"cancelled": True}),
    ],
    ids=["confirm", "select", "input", "editor"],
)  # fmt: skip
def test_other_dialogs_map_to_their_interaction_type(
    fields: dict[str, Any], kind: str, allowed: dict[str, Any], denied: dict[str, Any]
) -> None:
    d = dialog(**fields)
    assert d.interaction_type == kind
    assert answer(d, InteractionOutcome(decision="allow", reason="answered", value="b")) == (
        allowed
    )
    assert answer(d, DENY) == denied


@pytest.mark.parametrize("method", ["notify", "setStatus", "setWidget", "setTitle", "cancel"])
def test_dialogs_that_expect_no_answer_open_no_interaction(method: str) -> None:
    assert interpret(UiRequest(id="d1", method=method), timeout_ms=1, claim_tool=no_tool) is None


def test_the_agents_own_dialog_timeout_shortens_the_interaction() -> None:
    assert dialog(method="confirm", title="t", timeout=5000.0).timeout_ms == 5000
    assert dialog(method="confirm", title="t", timeout=900_000.0).timeout_ms == 60_000


def test_the_denial_sent_without_asking_refuses() -> None:
    assert dialog(method="input", title="Name?").denial() == {
        "type": "extension_ui_response",
        "id": "d1",
        "cancelled": True,
    }


def approval(options: list[str] | None) -> Dialog:
    return dialog(method="select", title="Allow tool: bash\nCommand: ls", options=options)


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (["Approve", "Deny"], {"value": "Deny"}),
        (["Reject", "Approve"], {"value": "Reject"}),
        (["Approve", "Always approve"], {"cancelled": True}),
        (["Approve"], {"cancelled": True}),
        (["Yes", "No"], {"value": "No"}),
        (["Allow once", "Don't allow"], {"value": "Don't allow"}),
        (["Approve", "Deny and never ask again"], {"cancelled": True}),
        (None, {"cancelled": True}),
    ],
)
@pytest.mark.parametrize("refusal", ["deny", "timeout", "denial without asking"])
def test_a_deny_never_selects_an_option_that_approves(
    options: list[str] | None, expected: dict[str, Any], refusal: str
) -> None:
    d = approval(options)
    if refusal == "deny":
        response = answer(d, DENY)
    elif refusal == "timeout":
        response = answer(d, TIMEOUT)
    else:
        response = d.denial()
        assert (response.pop("type"), response.pop("id")) == ("extension_ui_response", "d1")
    assert response == expected


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (["Approve", "Deny"], {"value": "Approve"}),
        (["Reject", "Approve"], {"value": "Approve"}),
        (["Always approve", "Approve", "Deny"], {"value": "Approve"}),
        (["Yes", "No"], {"value": "Yes"}),
        (["Always approve", "Deny"], {"cancelled": True}),
        (["Deny", "Reject"], {"cancelled": True}),
        (["Don't allow", "Cancel"], {"cancelled": True}),
        (None, {"cancelled": True}),
    ],
)
def test_an_allow_selects_a_one_time_approval_and_never_a_standing_one_or_a_deny(
    options: list[str] | None, expected: dict[str, Any]
) -> None:
    assert answer(approval(options), ALLOW) == expected


@pytest.mark.parametrize("options", [["Approve", "Always approve"], ["Run it", "Skip"], ["a", "b"]])
def test_a_plain_select_refused_by_the_master_is_cancelled_whatever_its_options(
    options: list[str],
) -> None:
    d = dialog(method="select", title="Pick one", options=options)
    assert answer(d, DENY) == answer(d, TIMEOUT) == {"cancelled": True}
