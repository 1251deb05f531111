"""The session's model and thinking level as the agent advertises them, sans I/O.

ACP has two ways, and agents use either or both:

- ``configOptions`` (stable): a ``select`` option of category ``model`` (omp, claude-agent-acp,
  codex-acp, qwen-code) and one of category ``thought_level`` (omp's ``thinking``), set with
  ``session/set_config_option``; the answer and ``config_option_update`` carry them all again;
- ``models`` in the ``session/new`` / ``session/load`` result (unstable; the Python SDK 0.12.1
  drops it, so the transport reads it raw): ``availableModels`` and ``currentModelId``, set
  with ``session/set_model`` (gemini-cli has only these).

The config option is preferred when there is one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from acp import schema

from rawp_adapters.frames import ModelInfo

ConfigOption = schema.SessionConfigOptionSelect | schema.SessionConfigOptionBoolean


@dataclass(frozen=True, slots=True)
class AdvertisedModels:
    """The unstable ``models`` of ``session/new``."""

    available: tuple[ModelInfo, ...]
    current: str | None


def advertised_models(raw: object) -> AdvertisedModels | None:
    """``result.models`` of ``session/new`` read leniently (``None`` when absent or malformed)."""
    if not isinstance(raw, dict):
        return None
    entries = raw.get("availableModels")
    if not isinstance(entries, list):
        return None
    available = tuple(
        ModelInfo(id=e["modelId"], name=e.get("name") if isinstance(e.get("name"), str) else None)
        for e in entries
        if isinstance(e, dict) and isinstance(e.get("modelId"), str)
    )
    current = raw.get("currentModelId")
    return AdvertisedModels(available, current if isinstance(current, str) else None)


def _select(
    options: Sequence[ConfigOption], category: str
) -> schema.SessionConfigOptionSelect | None:
    for option in options:
        if isinstance(option, schema.SessionConfigOptionSelect) and option.category == category:
            return option
    return None


def choices(option: schema.SessionConfigOptionSelect) -> list[schema.SessionConfigSelectOption]:
    """The option's values, groups flattened."""
    out: list[schema.SessionConfigSelectOption] = []
    for item in option.options:
        if isinstance(item, schema.SessionConfigSelectGroup):
            out += item.options
        else:
            out.append(item)
    return out


def _with_current(models: list[ModelInfo], current: str | None) -> list[ModelInfo]:
    # gemini-cli's current model (from --model) is not among its availableModels
    if current is not None and all(m.id != current for m in models):
        return [ModelInfo(id=current), *models]
    return models


@dataclass
class ModelControl:
    """What the agent said last about its model and thinking level."""

    options: list[ConfigOption] = field(default_factory=list)
    advertised: AdvertisedModels | None = None

    @property
    def model_option(self) -> schema.SessionConfigOptionSelect | None:
        return _select(self.options, "model")

    @property
    def thinking_option(self) -> schema.SessionConfigOptionSelect | None:
        return _select(self.options, "thought_level")

    @property
    def can_change_model(self) -> bool:
        return self.model_option is not None or self.advertised is not None

    @property
    def current_model(self) -> str | None:
        option = self.model_option
        if option is not None:
            return option.current_value
        return self.advertised.current if self.advertised is not None else None

    @property
    def thinking_level(self) -> str | None:
        option = self.thinking_option
        return option.current_value if option is not None else None

    def models(self) -> list[ModelInfo]:
        option = self.model_option
        if option is not None:
            found = [ModelInfo(id=c.value, name=c.name) for c in choices(option)]
        elif self.advertised is not None:
            found = list(self.advertised.available)
        else:
            found = []
        return _with_current(found, self.current_model)

    def thinking_levels(self) -> list[str]:
        option = self.thinking_option
        return [c.value for c in choices(option)] if option is not None else []

    def model_set(self, model: str) -> None:
        """``session/set_model`` succeeded."""
        if self.advertised is not None:
            self.advertised = AdvertisedModels(self.advertised.available, model)
