"""What the warm server imports before it forks, and how it knows that code is still
what is on disk."""

from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import importlib
import io
import os
import sys
import sysconfig

from pydantic import BaseModel

from rawp_adapters._errors import RawpError
from rawp_adapters._registry import hold_entry_points, installed_adapters, resolve_adapter
from rawp_adapters.cli import _metadata, build_parser

_BRIDGE_MODULES = (
    "anyio._backends._asyncio",
    "anyio._core._fileio",
    "anyio._core._signals",
    "anyio._core._subprocesses",
    "rawp_adapters._telemetry._export",
    "rawp_adapters.cli._commands",
    "rawp_adapters._frames",
    "rawp_adapters._adapter",
)
_OPTIONAL_MODULES = ("anyio._backends._trio",)


def preload() -> None:
    """Import what every ``serve --stdio`` runs, read the installed adapters, build the
    command's parser and the models (a cold start builds each at its first use). What is
    loaded then stays out of the collector's sight (``gc.freeze``): a session's
    collections would touch, and so copy, every page of it."""
    for name in _BRIDGE_MODULES:
        importlib.import_module(name)
    for name in _OPTIONAL_MODULES:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    hold_entry_points()
    installed_adapters()
    _command_parser()
    _build_models()
    gc.freeze()


def preload_adapter(argv: list[str]) -> bool:
    """Import the adapter a start names (read by the command's own parser), for the
    starts after it, and build the models it brought. True if anything was imported;
    what is wrong with a start is the session's to say, not the server's."""
    imported = len(sys.modules)
    with (
        contextlib.suppress(SystemExit, RawpError, ValueError),
        contextlib.redirect_stdout(io.StringIO()),
        contextlib.redirect_stderr(io.StringIO()),
    ):
        resolve_adapter(_metadata(_command_parser().parse_args(argv)))
    if len(sys.modules) == imported:
        return False
    _build_models()
    gc.freeze()
    return True


@functools.cache
def _command_parser() -> argparse.ArgumentParser:
    return build_parser()


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
