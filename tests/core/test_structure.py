"""The shape of every distribution's code: one exception root for everything public,
and modules that import each other without a circle."""

from __future__ import annotations

import ast
import importlib
import inspect
from collections.abc import Iterator
from pathlib import Path

import pytest

from rawp_adapters import RawpError, _errors

REPO = Path(__file__).resolve().parents[2]
PACKAGES = {
    "rawp_adapters": REPO / "rawp_adapters",
    "rawp_adapter_process": REPO / "adapters" / "process" / "rawp_adapter_process",
    "rawp_adapter_sdk": REPO / "adapters" / "sdk" / "rawp_adapter_sdk",
    "rawp_adapter_acp": REPO / "adapters" / "acp" / "rawp_adapter_acp",
    "rawp_core_pydantic_ai": REPO / "adapters" / "pydantic_ai" / "rawp_core_pydantic_ai",
    "rawp_core_copilot": REPO / "adapters" / "copilot" / "rawp_core_copilot",
}
"""Each distribution's import package and where its code is."""

WARNINGS = {"rawp_adapters.testing.pytest_plugin.ConformanceAdvisory"}
"""The public warnings, which stay plain warnings (the exception tree says why)."""


def modules(root: Path, package: str) -> dict[str, Path]:
    """Every module of ``package`` (whose code is in ``root``) by dotted name."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = [package, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def public_modules() -> list[str]:
    names = (name for package, root in PACKAGES.items() for name in modules(root, package))
    return [name for name in names if not any(part.startswith("_") for part in name.split("."))]


def public_names(module: object) -> list[str]:
    exported = getattr(module, "__all__", None)
    return list(exported) if exported is not None else [n for n in vars(module) if n[0] != "_"]


@pytest.mark.parametrize("module_name", public_modules())
def test_every_exception_a_public_module_exports_is_a_rawp_error(module_name: str) -> None:
    module = importlib.import_module(module_name)
    tree = _errors.__doc__ or ""
    for name in public_names(module):
        value = getattr(module, name)
        if not (inspect.isclass(value) and issubclass(value, BaseException)):
            continue
        where = f"{module_name}.{name}"
        if issubclass(value, Warning):
            assert f"{value.__module__}.{value.__qualname__}" in WARNINGS, where
        else:
            assert issubclass(value, RawpError), f"{where} is not a RawpError"
        assert value.__name__ in tree, f"{where} is missing from the tree in _errors"


def imports(module: str, path: Path, known: set[str]) -> Iterator[str]:
    """The project modules ``module`` names in any import statement (at the top, under
    TYPE_CHECKING or in a function alike)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name in known)
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            source = ".".join(part for part in (base, node.module or "") if part)
            for alias in node.names:
                if f"{source}.{alias.name}" in known:
                    yield f"{source}.{alias.name}"
                elif source in known:
                    yield source


def import_circle(roots: dict[str, Path]) -> list[str] | None:
    """One circle of imports among the modules of ``roots`` (package → code), or None."""
    files = {
        name: path
        for package, root in roots.items()
        for name, path in modules(root, package).items()
    }
    graph = {name: set(imports(name, path, set(files))) - {name} for name, path in files.items()}
    done: set[str] = set()
    path: list[str] = []

    def visit(name: str) -> list[str] | None:
        if name in path:
            return [*path[path.index(name) :], name]
        if name in done:
            return None
        path.append(name)
        for target in sorted(graph[name]):
            if circle := visit(target):
                return circle
        path.pop()
        done.add(name)
        return None

    return next(filter(None, map(visit, sorted(graph))), None)


def test_no_module_of_any_distribution_imports_itself_through_others() -> None:
    circle = import_circle(PACKAGES)
    assert circle is None, " -> ".join(circle or ())
