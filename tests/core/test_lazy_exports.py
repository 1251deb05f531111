"""Packages whose public names are imported when first used offer the same names, as the
same objects, as they show type checkers (their ``TYPE_CHECKING`` imports)."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

LAZY_PACKAGES = ("rawp_adapters", "rawp_adapters.host")


def type_checking_imports(package: str) -> dict[str, str]:
    """Each name the ``if TYPE_CHECKING:`` block of ``package`` imports, and its module."""
    source = Path(importlib.import_module(package).__file__ or "").read_text()
    found = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom)
                found.update({alias.name: statement.module or "" for alias in statement.names})
    return found


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_a_lazy_package_offers_what_it_shows_type_checkers_as_its_modules_objects(
    package: str,
) -> None:
    module = importlib.import_module(package)
    shown = type_checking_imports(package)
    assert sorted(shown) == sorted(module.__all__)
    assert set(shown) <= set(dir(module))
    for name, source in shown.items():
        assert getattr(module, name) is getattr(importlib.import_module(source), name), name
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        getattr(module, "Nothing")  # noqa: B009 - the attribute is looked up on purpose


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_importing_a_lazy_package_imports_none_of_its_modules(package: str) -> None:
    listing = f"import sys, {package}; print(*sorted(sys.modules))"
    imported = subprocess.run(
        [sys.executable, "-c", listing], capture_output=True, text=True, check=True, timeout=60
    ).stdout.split()
    modules = set(type_checking_imports(package).values())
    assert sorted(modules & set(imported)) == []
