"""Interaction answers: only an explicit allow that fits the question allows."""

from __future__ import annotations

import pytest

from rawp_adapters._protocol import judge
from rawp_adapters.frames import InteractionRequest, InteractionResponse


def request(kind: str, options: list[str] | None = None) -> InteractionRequest:
    context = {"tool_name": "bash"} if kind == "PERMISSION" else {}
    return InteractionRequest.model_validate(
        {
            "interaction_id": "i1",
            "interaction_type": kind,
            "timeout_ms": 1000,
            "options": options,
            "context": context,
        }
    )


def answer(decision: str | None = None, value: str | None = None) -> InteractionResponse:
    return InteractionResponse.model_validate(
        {"interaction_id": "i1", "decision": decision, "value": value}
    )


@pytest.mark.parametrize("kind", ["PERMISSION", "CONFIRM"])
def test_a_yes_no_question_allows_only_on_allow(kind: str) -> None:
    assert judge(request(kind), answer("allow")).allowed
    assert judge(request(kind), answer("deny")).reason == "answered"
    assert not judge(request(kind), answer("deny")).allowed
    missing = judge(request(kind), answer(value="yes"))
    assert (missing.decision, missing.reason) == ("deny", "malformed")


def test_a_select_answer_must_be_one_of_the_options() -> None:
    select = request("SELECT", ["red", "blue"])
    chosen = judge(select, answer(value="blue"))
    assert (chosen.allowed, chosen.value) == (True, "blue")
    assert judge(select, answer(value="green")).reason == "malformed"
    assert judge(select, answer("allow")).reason == "malformed"
    assert not judge(select, answer("deny", "blue")).allowed


def test_an_input_answer_needs_a_value() -> None:
    typed = judge(request("INPUT"), answer(value="hello"))
    assert (typed.allowed, typed.value) == (True, "hello")
    assert judge(request("INPUT"), answer("allow")).reason == "malformed"
