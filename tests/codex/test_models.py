"""The model and reasoning effort a codex thread runs, and what a change takes (sans I/O)."""

from __future__ import annotations

import pytest
from rawp_adapter_codex._models import ModelChoice
from rawp_adapter_codex._wire import Model

from rawp_adapters import ModelState, OperationRejected
from rawp_adapters.frames import ModelSet


def catalog() -> list[Model]:
    efforts = [{"reasoningEffort": e} for e in ("low", "high")]
    return [
        Model.model_validate({"id": i, "supportedReasoningEfforts": efforts}) for i in ("a", "b")
    ]


def test_a_change_waits_for_the_next_turn_start_which_takes_it_once() -> None:
    choice = ModelChoice("a", None, catalog())
    assert choice.turn_params() == {}
    assert choice.change(ModelSet(model="b", thinking_level="high")) == ModelState("b", "high")
    assert choice.turn_params() == {"model": "b", "effort": "high"}
    assert (choice.model, choice.effort) == ("a", None)
    choice.turn_started()
    assert (choice.model, choice.effort) == ("b", "high")
    assert choice.turn_params() == {}


def test_an_unlisted_model_or_effort_is_rejected_but_the_model_in_use_is_taken() -> None:
    choice = ModelChoice("custom", None, catalog())
    with pytest.raises(OperationRejected, match="no model 'c'"):
        choice.change(ModelSet(model="c"))
    with pytest.raises(OperationRejected, match="no reasoning effort 'max'"):
        choice.change(ModelSet(model="a", thinking_level="max"))
    assert choice.change(ModelSet(model="custom", thinking_level="max")).model == "custom"
    assert choice.turn_params() == {"model": "custom", "effort": "max"}


def test_without_a_list_any_model_is_taken() -> None:
    choice = ModelChoice("a", "low")
    assert choice.change(ModelSet(model="anything")) == ModelState("anything", "low")
    assert choice.infos() == []
