"""The thread's model and reasoning effort, sans I/O: codex takes both with each
``turn/start`` (for that turn and the next ones), so a change waits for the next turn."""

from __future__ import annotations

from dataclasses import dataclass, field

from rawp_adapter_codex._wire import Model
from rawp_adapters import ModelState, OperationRejected
from rawp_adapters.frames import ModelInfo, ModelSet


@dataclass
class ModelChoice:
    model: str | None
    """The model the last turn ran (the thread's, before the first)."""
    effort: str | None
    listed: list[Model] = field(default_factory=list)
    """What ``model/list`` listed: codex's catalog (``model_catalog_json``)."""
    next_model: str | None = None
    next_effort: str | None = None

    def infos(self) -> list[ModelInfo]:
        return [ModelInfo(id=m.id, name=m.display_name or None) for m in self.listed]

    def change(self, change: ModelSet) -> ModelState:
        """Take ``change`` for the next turn; what it will run. A model must be listed or
        the one in use (codex would send any name to its provider); an effort must be
        one the model lists. Raises :class:`OperationRejected` otherwise."""
        known = {m.id: m for m in self.listed}
        current = self.next_model or self.model
        model = change.model or current
        if change.model not in (None, current) and known and change.model not in known:
            raise OperationRejected(
                f"codex has no model {change.model!r} (it has {', '.join(known)})"
            )
        listed = known.get(model) if model is not None else None
        efforts = [e.reasoning_effort for e in listed.supported_reasoning_efforts] if listed else []
        if change.thinking_level is not None and efforts and change.thinking_level not in efforts:
            raise OperationRejected(
                f"{model} has no reasoning effort {change.thinking_level!r} "
                f"(it has {', '.join(efforts)})"
            )
        self.next_model = change.model or self.next_model
        self.next_effort = change.thinking_level or self.next_effort
        return ModelState(model=model, thinking_level=self.next_effort or self.effort)

    def turn_params(self) -> dict[str, str]:
        """The ``model`` and ``effort`` of the next ``turn/start``, if changed."""
        params = {"model": self.next_model, "effort": self.next_effort}
        return {key: value for key, value in params.items() if value is not None}

    def turn_started(self) -> None:
        """codex took the change: it is the thread's now."""
        self.model = self.next_model or self.model
        self.effort = self.next_effort or self.effort
        self.next_model = self.next_effort = None
