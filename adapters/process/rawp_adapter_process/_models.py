"""The agent's model, thinking level and todo list as ``get_state`` and
``get_available_models`` report them, and how DPS names its models.

A DPS model id is ``<provider>/<modelId>`` (what omp takes for ``--model``); ``set_model``
needs the two apart, exactly as ``get_available_models`` lists them. A bare ``modelId``
is accepted when one provider alone has it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import msgspec

from rawp_adapter_process._plans import TodoPhase
from rawp_adapters.frames import ModelInfo

THINKING_LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh")
"""What ``set_thinking_level`` takes; the agent clamps a level to what the model
supports and says nothing, so the level it reports afterwards is the one in use."""


T = TypeVar("T", bound=msgspec.Struct)


class ModelRef(msgspec.Struct):
    id: str = ""
    provider: str = ""
    name: str | None = None

    @property
    def dps_id(self) -> str:
        return f"{self.provider}/{self.id}" if self.provider else self.id

    def info(self) -> ModelInfo:
        return ModelInfo(id=self.dps_id, name=self.name, provider=self.provider or None)


class StateInfo(msgspec.Struct):
    """What the adapter reads of a ``get_state`` answer (xcsh and omp have
    ``todoPhases``; pi has no todo list)."""

    model: ModelRef | None = None
    thinkingLevel: str | None = None
    todoPhases: list[TodoPhase] | None = None


class ModelList(msgspec.Struct):
    models: list[ModelRef] = []


class HostToolNames(msgspec.Struct):
    toolNames: list[str] = []


class TodoAnswer(msgspec.Struct):
    todoPhases: list[TodoPhase] = []


def decode_as(data: msgspec.Raw, kind: type[T]) -> T:
    """``data`` of an answer as ``kind``; its defaults when the agent sent none or
    something else."""
    if data:
        try:
            return msgspec.json.decode(data, type=kind)
        except (msgspec.DecodeError, UnicodeDecodeError):
            pass
    return kind()


def find_model(models: Sequence[ModelRef], wanted: str) -> ModelRef | None:
    """The model ``wanted`` names: ``provider/modelId``, or a ``modelId`` only one
    provider has."""
    for model in models:
        if model.dps_id == wanted:
            return model
    bare = [model for model in models if model.id == wanted]
    return bare[0] if len(bare) == 1 else None
