"""What the warm server imports before it forks, and how it knows that code is still
what is on disk."""

from __future__ import annotations

import contextlib
import gc
import importlib
import os
import sys
import sysconfig

from pydantic import BaseModel

from rawp_adapters._errors import RawpError
from rawp_adapters._registry import hold_entry_points, installed_adapters, load_adapter_class

_BRIDGE_MODULES = (
    "anyio._backends._asyncio",
    "anyio._core._fileio",
    "anyio._core._signals",
    "anyio._core._subprocesses",
    "rawp_adapters._telemetry._export",
    "rawp_adapters.cli",
    "rawp_adapters.cli._commands",
    "rawp_adapters._frames",
    "rawp_adapters._adapter",
    "rawp_adapters._warm._child",
)
_OPTIONAL_MODULES = ("anyio._backends._trio",)
_preloaded_adapters: set[str] = set()


def preload() -> None:
    """Import what every ``serve --stdio`` runs, read the installed adapters, and build
    the models (a cold start builds each at its first use). What is loaded then stays
    out of the collector's sight (``gc.freeze``): a session's collections would touch,
    and so copy, every page of it."""
    for name in _BRIDGE_MODULES:
        importlib.import_module(name)
    for name in _OPTIONAL_MODULES:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    hold_entry_points()
    installed_adapters()
    _build_models()
    gc.freeze()


def preload_adapter(argv: list[str]) -> bool:
    """Import the adapter a start named, once, for the starts after it, and build its
    models. True if it was imported now."""
    adapter_type = _adapter_named(argv)
    if adapter_type in _preloaded_adapters:
        return False
    _preloaded_adapters.add(adapter_type)
    with contextlib.suppress(RawpError):
        load_adapter_class(adapter_type)
    _build_models()
    gc.freeze()
    return True


def _build_models() -> None:
    """Build every model of this project's modules (the core's and the adapters')."""
    for name, module in list(sys.modules.items()):
        if not name.startswith("rawp_"):
            continue
        for value in list(vars(module).values()):
            if (
                isinstance(value, type)
                and issubclass(value, BaseModel)
                and not value.__pydantic_complete__
            ):
                with contextlib.suppress(Exception):
                    value.model_rebuild()


def _adapter_named(argv: list[str]) -> str:
    for index, arg in enumerate(argv):
        if arg == "--adapter" and index + 1 < len(argv):
            return argv[index + 1]
        if arg.startswith("--adapter="):
            return arg.partition("=")[2]
    return "sdk"


class CodeOnDisk:
    """What the server's code is on disk: the modification time of each module it has
    loaded (the standard library aside: the interpreter's version is in the server's
    key), and the distributions in each directory on ``sys.path`` (their entry points
    are read once: a plugin installed or removed must reach the next session)."""

    def __init__(self) -> None:
        paths = sysconfig.get_paths()
        self._stdlib = (paths["stdlib"], paths["platstdlib"])
        self._files: dict[str, int] = {}
        self._dirs = {entry or ".": _Distributions(entry or ".") for entry in sys.path}
        self.add_loaded()

    def add_loaded(self) -> None:
        for module in list(sys.modules.values()):
            path = getattr(module, "__file__", None)
            if (
                isinstance(path, str)
                and path not in self._files
                and not path.startswith(self._stdlib)
            ):
                self._files[path] = _mtime(path)

    def changed(self) -> str | None:
        """The first module file or ``sys.path`` directory that changed, or None."""
        for path, seen in self._files.items():
            if _mtime(path) != seen:
                return path
        for path, distributions in self._dirs.items():
            if distributions.changed():
                return path
        return None


class _Distributions:
    """The distributions (``*.dist-info``, ``*.egg-info``) in one directory, read again
    only when the directory itself changed (a workspace on ``sys.path`` changes often)."""

    def __init__(self, where: str) -> None:
        self._where = where
        self._mtime = _mtime(where)
        self._seen = self._read()

    def changed(self) -> bool:
        mtime = _mtime(self._where)
        if mtime == self._mtime:
            return False
        self._mtime = mtime
        return self._read() != self._seen

    def _read(self) -> dict[str, int]:
        try:
            names = os.listdir(self._where)
        except OSError:
            return {}
        return {
            name: _mtime(os.path.join(self._where, name))
            for name in names
            if name.endswith((".dist-info", ".egg-info", ".pth"))
        }


def _mtime(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return -1
