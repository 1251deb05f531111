"""Finding adapters by ``adapter_type`` through the ``rawp_adapters.adapters`` entry points.

The built-in ``process`` and ``sdk`` adapters register exactly like a third-party
plugin; the core never imports them by name.

A Master may know only the spec's ``adapter_type`` values (``process``, ``sdk``). A
plugin that speaks another protocol to an agent of one of those kinds (an ACP agent
is a process agent) registers as ``<adapter_type>.<protocol>``, e.g. ``process.acp``,
and is reached with ``adapter_type: process`` and ``settings: {"protocol": "acp", …}``:
the registry takes ``protocol`` out of the settings and hands the rest to the plugin.
Such a plugin's class states the ``adapter_type`` it is reached by, so that
``session.capabilities`` stays honest.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points

from rawp_adapters._adapter import Adapter, AgentMetadata
from rawp_adapters._errors import AdapterLoadError, AdapterNotFoundError, InvalidSettingsError

ENTRY_POINT_GROUP = "rawp_adapters.adapters"
PROTOCOL_SETTING = "protocol"
"""The settings key that picks among the plugins of one ``adapter_type``."""


@dataclass(frozen=True, slots=True)
class InstalledAdapter:
    adapter_type: str
    distribution: str | None
    version: str | None
    target: str
    protocol: str | None = None
    """Set for a plugin registered as ``<adapter_type>.<protocol>``."""


_held: dict[str, dict[str, EntryPoint]] | None = None
"""Each group's entry points once read, when :func:`hold_entry_points` was called."""


def hold_entry_points() -> None:
    """Read each group's entry points once from now on (reading searches every
    distribution on ``sys.path``). For the warm server, which forks the sessions and
    steps down when a directory on ``sys.path`` changes, as installing a plugin does."""
    global _held
    _held = {}


def entry_points_by_name(group: str) -> dict[str, EntryPoint]:
    """The entry points of a plugin ``group`` by name; the first registration of a name
    wins. For adapters' own plugin groups too (the SDK adapter's cores use it)."""
    if _held is not None and group in _held:
        return dict(_held[group])
    found: dict[str, EntryPoint] = {}
    for ep in entry_points(group=group):
        found.setdefault(ep.name, ep)
    if _held is not None:
        _held[group] = dict(found)
    return found


def _entry_points() -> dict[str, EntryPoint]:
    return entry_points_by_name(ENTRY_POINT_GROUP)


def installed_adapters() -> list[InstalledAdapter]:
    """Every adapter installed in this environment, sorted by its entry-point name
    (``adapter_type``, or ``adapter_type.protocol``)."""
    installed = []
    for name, ep in sorted(_entry_points().items()):
        adapter_type, _, protocol = name.partition(".")
        installed.append(
            InstalledAdapter(
                adapter_type=adapter_type,
                distribution=ep.dist.name if ep.dist is not None else None,
                version=ep.dist.version if ep.dist is not None else None,
                target=ep.value,
                protocol=protocol or None,
            )
        )
    return installed


def load_adapter_class(adapter_type: str, protocol: str | None = None) -> type[Adapter]:
    """The adapter class registered as ``adapter_type`` (as ``adapter_type.protocol``
    when a protocol is named).

    Raises :class:`AdapterNotFoundError` (naming what is installed) or
    :class:`AdapterLoadError`, also when a protocol plugin's class states another
    ``adapter_type`` than the one it is reached by.
    """
    name = adapter_type if protocol is None else f"{adapter_type}.{protocol}"
    eps = _entry_points()
    ep = eps.get(name)
    if ep is None:
        raise AdapterNotFoundError(name, list(eps))
    try:
        loaded = ep.load()
    except Exception as exc:
        raise AdapterLoadError(f"adapter {name!r} ({ep.value}) failed to load: {exc}") from exc
    if not (isinstance(loaded, type) and issubclass(loaded, Adapter)):
        raise AdapterLoadError(f"adapter {name!r} ({ep.value}) is not an Adapter subclass")
    if protocol is not None and getattr(loaded, "adapter_type", None) != adapter_type:
        raise AdapterLoadError(
            f"adapter {name!r} ({ep.value}) states adapter_type "
            f"{getattr(loaded, 'adapter_type', None)!r}; a plugin reached as "
            f"{adapter_type!r} must state {adapter_type!r}"
        )
    return loaded


def create_adapter(metadata: AgentMetadata) -> Adapter:
    """A new adapter for ``metadata``, its settings validated. A ``protocol`` setting
    picks the plugin registered as ``adapter_type.protocol`` and is not passed on."""
    adapter_class, given = resolve_adapter(metadata)
    return adapter_class.from_metadata(given)


def resolve_adapter(metadata: AgentMetadata) -> tuple[type[Adapter], AgentMetadata]:
    """The class ``metadata`` names (loaded) and the metadata it is made from: the
    ``protocol`` setting, which picked the plugin, taken out."""
    protocol = metadata.settings.get(PROTOCOL_SETTING)
    if protocol is None:
        return load_adapter_class(metadata.adapter_type), metadata
    if not isinstance(protocol, str) or not protocol or "." in protocol:
        raise InvalidSettingsError(
            f"settings.{PROTOCOL_SETTING} names a protocol, e.g. 'acp', not {protocol!r}"
        )
    settings = {k: v for k, v in metadata.settings.items() if k != PROTOCOL_SETTING}
    adapter_class = load_adapter_class(metadata.adapter_type, protocol)
    return adapter_class, metadata.model_copy(update={"settings": settings})
