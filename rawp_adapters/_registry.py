"""Finding adapters by ``adapter_type`` through the ``rawp_adapters.adapters`` entry points.

The built-in ``process`` and ``sdk`` adapters register exactly like a third-party
plugin; the core never imports them by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points

from rawp_adapters._adapter import Adapter, AgentMetadata
from rawp_adapters._errors import AdapterLoadError, AdapterNotFoundError

ENTRY_POINT_GROUP = "rawp_adapters.adapters"


@dataclass(frozen=True, slots=True)
class InstalledAdapter:
    adapter_type: str
    distribution: str | None
    version: str | None
    target: str


def entry_points_by_name(group: str) -> dict[str, EntryPoint]:
    """The entry points of a plugin ``group`` by name; the first registration of a name
    wins. For adapters' own plugin groups too (the SDK adapter's cores use it)."""
    found: dict[str, EntryPoint] = {}
    for ep in entry_points(group=group):
        found.setdefault(ep.name, ep)
    return found


def _entry_points() -> dict[str, EntryPoint]:
    return entry_points_by_name(ENTRY_POINT_GROUP)


def installed_adapters() -> list[InstalledAdapter]:
    """Every adapter installed in this environment, sorted by ``adapter_type``."""
    return [
        InstalledAdapter(
            adapter_type=name,
            distribution=ep.dist.name if ep.dist is not None else None,
            version=ep.dist.version if ep.dist is not None else None,
            target=ep.value,
        )
        for name, ep in sorted(_entry_points().items())
    ]


def load_adapter_class(adapter_type: str) -> type[Adapter]:
    """The adapter class registered as ``adapter_type``.

    Raises :class:`AdapterNotFoundError` (naming what is installed) or
    :class:`AdapterLoadError`.
    """
    eps = _entry_points()
    ep = eps.get(adapter_type)
    if ep is None:
        raise AdapterNotFoundError(adapter_type, list(eps))
    try:
        loaded = ep.load()
    except Exception as exc:
        raise AdapterLoadError(
            f"adapter {adapter_type!r} ({ep.value}) failed to load: {exc}"
        ) from exc
    if not (isinstance(loaded, type) and issubclass(loaded, Adapter)):
        raise AdapterLoadError(f"adapter {adapter_type!r} ({ep.value}) is not an Adapter subclass")
    return loaded


def create_adapter(metadata: AgentMetadata) -> Adapter:
    """A new adapter for ``metadata``, its settings validated."""
    return load_adapter_class(metadata.adapter_type).from_metadata(metadata)
