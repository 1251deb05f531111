"""A package's public names imported from their modules when first read (PEP 562).

``rawp-adapters serve --stdio`` is started once per session by a Master, and pays for
every module it imports each time: a package's ``__init__`` names what it offers, and
imports the module behind a name only when that name is used. The names are also
imported under ``TYPE_CHECKING`` in the ``__init__``, for type checkers and editors.
"""

from __future__ import annotations

import importlib
import sys

TYPE_CHECKING = False  # typing itself costs the warm launcher milliseconds
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping
    from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, Iterable[str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``, whose public names are
    ``exports`` (module → the names it defines). A name is imported from its module at
    its first read, then kept in the package like any attribute."""
    module_of = {name: module for module, names in exports.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *module_of})

    return __getattr__, __dir__
