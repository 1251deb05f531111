"""The reply policies every host can use."""

from __future__ import annotations

from typing import Any

import pytest

from rawp_adapters.frames import InteractionRequest
from rawp_adapters.host import Policy, Reply, allow_all, deny_all, never_answer


def request(kind: str, **fields: Any) -> InteractionRequest:
    if kind == "PERMISSION":
        fields.setdefault("context", {"tool_name": "bash"})
    return InteractionRequest.model_validate(
        {"interaction_id": "i1", "interaction_type": kind, "timeout_ms": 1000, **fields}
    )


@pytest.mark.parametrize(
    ("kind", "fields", "reply"),
    [
        ("PERMISSION", {}, Reply(decision="allow")),
        ("CONFIRM", {}, Reply(decision="allow")),
        ("SELECT", {"options": ["small", "large"]}, Reply(decision="allow", value="small")),
        ("SELECT", {}, Reply(decision="allow", value="")),
        ("INPUT", {}, Reply(decision="allow", value="")),
    ],
)
def test_allow_all_allows_with_the_first_option_or_empty_input(
    kind: str, fields: dict[str, Any], reply: Reply
) -> None:
    assert allow_all(request(kind, **fields)) == reply


@pytest.mark.parametrize("kind", ["PERMISSION", "CONFIRM", "SELECT", "INPUT"])
def test_deny_all_denies_and_never_answer_leaves_it_unanswered(kind: str) -> None:
    assert deny_all(request(kind)) == Reply(decision="deny")
    unanswered: Policy = never_answer
    assert unanswered(request(kind)) is None


def test_a_reply_is_an_allow_with_an_optional_value_a_deny_or_a_timeout() -> None:
    assert Reply.allow("x") == Reply(decision="allow", value="x")
    assert Reply.deny() == Reply(decision="deny")
    assert not Reply.allow().timeout
    assert Reply(timeout=True).decision is None
