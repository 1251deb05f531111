"""MkDocs hooks of the documentation site (``mkdocs.yml``: ``hooks``).

- ``specs/`` (the contract, the generated frame reference and the JSON Schemas) is
  served under ``specs/`` as it is in the repository, not copied into ``docs/``.
- Relative links keep working both in the repository and on the site: a link from a
  page to a file the site serves is pointed at its place in the site, a link to a
  repository file the site does not serve (the README, source code, a folder) becomes
  its path as text, and a link to nothing is left for ``mkdocs build --strict`` to
  refuse.
- Markers in a page are replaced by tables generated from what they describe:
  ``<!-- settings: module:Model -->`` the fields of an adapter's pydantic settings,
  ``<!-- options: module:Core -->`` an SDK core's ``core_options`` (its docstring and
  keyword arguments), ``<!-- readme-table: features|operations [rows=REGEX] -->`` the README's
  agents table (the rows whose first cell matches ``REGEX``), ``<!-- readme-command: TEXT
  -->`` the README's commands holding ``TEXT`` (the ``check`` lines its tests run).
"""

from __future__ import annotations

import importlib
import inspect
import json
import posixpath
import re
import types
import typing
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page
from pydantic import BaseModel

SERVED_DIRECTORY = "specs"
"""Served under its own name beside the pages of ``docs/``."""

README_TABLES = {"features": "text", "operations": "host tools"}
"""The README's agents tables, by the name a marker gives and their second column."""

_MARKER = re.compile(r"<!-- (settings|options|readme-table|readme-command): (.+?) -->")
_FENCED = re.compile(r"^```\w*\n.*?^```$", re.DOTALL | re.MULTILINE)
_LINK = re.compile(r"\[([^\]\n]*)\]\(([^)\s]+)\)")
_EXTERNAL = re.compile(r"^([a-z][a-z0-9+.-]*:|#|/)", re.IGNORECASE)


class DocsError(PluginError):
    """A marker that cannot be expanded; the build stops with it (and no traceback)."""


def on_files(files: Files, config: MkDocsConfig) -> Files:
    root = _repository(config)
    for path in sorted((root / SERVED_DIRECTORY).rglob("*")):
        if path.is_file() and path.suffix in (".md", ".json"):
            src_uri = path.relative_to(root).as_posix()
            files.append(File(src_uri, str(root), config.site_dir, config.use_directory_urls))
    return files


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    root = _repository(config)
    expanded = _MARKER.sub(lambda m: _expand(m.group(1), m.group(2), root), markdown)
    page_file = Path(page.file.abs_src_path or "")
    return retarget_links(expanded, page_file, root, lambda uri: files.get_file_from_path(uri))


def retarget_links(
    markdown: str, page_file: Path, root: Path, served: typing.Callable[[str], object | None]
) -> str:
    """``markdown`` of the page at ``page_file`` with its relative links pointed at the
    site (``served(src_uri)`` says whether the site has a file)."""
    page_uri = site_uri(page_file.relative_to(root).as_posix())
    assert page_uri is not None, f"{page_file} is not a page of the site"

    def retarget(match: re.Match[str]) -> str:
        text, target = match.groups()
        if _EXTERNAL.match(target):
            return match.group(0)
        path, _, anchor = target.partition("#")
        on_disk = (page_file.parent / path).resolve()
        if not on_disk.exists() or not on_disk.is_relative_to(root):
            return match.group(0)
        repository_path = on_disk.relative_to(root).as_posix()
        uri = site_uri(repository_path)
        if uri is not None and served(uri) is not None:
            relative = posixpath.relpath(uri, posixpath.dirname(page_uri) or ".")
            return f"[{text}]({relative}{'#' + anchor if anchor else ''})"
        shown = f"`{repository_path}`"
        return shown if text.strip("`") in (repository_path, path) else f"{text} ({shown})"

    return _LINK.sub(retarget, markdown)


def site_uri(repository_path: str) -> str | None:
    """Where a repository file is in the site's sources, if it can be there."""
    if repository_path.startswith("docs/"):
        return repository_path.removeprefix("docs/")
    if repository_path.startswith(f"{SERVED_DIRECTORY}/"):
        return repository_path
    return None


def _repository(config: MkDocsConfig) -> Path:
    return Path(config.config_file_path).resolve().parent


def _expand(kind: str, argument: str, root: Path) -> str:
    if kind.startswith("readme-"):
        readme = (root / "README.md").read_text(encoding="utf-8")
        if kind == "readme-command":
            return readme_command(readme, argument)
        table, _, rows = argument.partition(" rows=")
        return readme_table(readme, table, rows)
    target = _import(argument)
    if kind == "settings":
        if not (isinstance(target, type) and issubclass(target, BaseModel)):
            raise DocsError(f"{argument} is not a pydantic model")
        return settings_table(target)
    return options_table(target)


def _import(path: str) -> Any:
    module, _, name = path.strip().partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as error:
        raise DocsError(f"cannot import {path}: {error}") from error


def settings_table(model: type[BaseModel]) -> str:
    """Every field of ``model``: name, type, default and description; then the same
    for each nested settings model its fields use."""
    rows = ["| setting | type | default | description |", "| --- | --- | --- | --- |"]
    nested: list[type[BaseModel]] = []
    for name, field in model.model_fields.items():
        default = (
            "required"
            if field.is_required()
            else _code(field.get_default(call_default_factory=True))
        )
        rows.append(
            f"| `{name}` | {type_text(field.annotation)} | {default} "
            f"| {_cell(field.description or '')} |"
        )
        nested += [m for m in _models_in(field.annotation) if m not in nested]
    tables = ["\n".join(rows)]
    for inner in nested:
        tables.append(f"`{inner.__name__}`:\n\n{settings_table(inner)}")
    return "\n\n".join(tables)


def options_table(factory: Any) -> str:
    """An SDK core's factory's docstring, then its keyword arguments (its
    ``core_options``): name, type and default."""
    rows = ["| option | type | default |", "| --- | --- | --- |"]
    for name, parameter in inspect.signature(factory).parameters.items():
        if parameter.kind is not inspect.Parameter.KEYWORD_ONLY:
            continue
        default = "required" if parameter.default is parameter.empty else _code(parameter.default)
        rows.append(f"| `{name}` | `{parameter.annotation}` | {default} |")
    if len(rows) == 2:
        raise DocsError(f"{factory!r} takes no keyword options")
    described = inspect.getdoc(factory) or ""
    return "\n\n".join([described.replace("``", "`"), "\n".join(rows)]).strip()


def readme_table(readme: str, table: str, rows: str = "") -> str:
    """The README's agents table ``table`` (a key of :data:`README_TABLES`), its rows
    limited to those whose first cell matches the regular expression ``rows``."""
    if table not in README_TABLES:
        raise DocsError(f"no README table {table!r}: one of {sorted(README_TABLES)}")
    lines = readme.splitlines()
    heads = [i for i, line in enumerate(lines) if _cells(line)[1:2] == [README_TABLES[table]]]
    if not heads:
        raise DocsError(f"the README has no table whose second column is {README_TABLES[table]!r}")
    index = heads[0]
    body = []
    for line in lines[index + 2 :]:
        if not line.startswith("|"):
            break
        if re.search(rows, _cells(line)[0], re.IGNORECASE):
            body.append(line)
    if not body:
        raise DocsError(f"no row of the README's {table} table matches {rows!r}")
    return "\n".join([lines[index], lines[index + 1], *body])


def readme_command(readme: str, text: str) -> str:
    """The commands of the README's code blocks that hold ``text`` (a command goes on
    over lines that end with a backslash), as a code block of the same language."""
    for block in _FENCED.findall(readme):
        opening, *lines, _ = str(block).split("\n")
        commands: list[list[str]] = [[]]
        for line in lines:
            commands[-1].append(line)
            if not line.endswith("\\"):
                commands.append([])
        holding = ["\n".join(command) for command in commands if text in "\n".join(command)]
        if holding:
            return "\n".join([opening, *holding, "```"])
    raise DocsError(f"no code block of the README holds {text!r}")


def type_text(annotation: Any) -> str:
    """A field's type as a reader writes it: ``list[str]``, ``"a" | "b"``, ``int | None``
    (in a code span, where a table's ``|`` needs no escape)."""
    return f"`{_type_name(annotation)}`"


def _type_name(annotation: Any) -> str:
    origin, args = get_origin(annotation), get_args(annotation)
    if annotation is type(None):
        return "None"
    if origin is Literal:
        return " | ".join(json.dumps(arg) for arg in args)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_type_name(arg) for arg in args)
    if origin is not None:
        return f"{getattr(origin, '__name__', origin)}[{', '.join(map(_type_name, args))}]"
    return str(getattr(annotation, "__name__", annotation))


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for arg in get_args(annotation) for model in _models_in(arg)]


def _code(value: Any) -> str:
    if isinstance(value, BaseModel):
        return "see below"
    try:
        text = json.dumps(value, ensure_ascii=False)
    except TypeError:
        text = repr(value)
    return f"`{text}`"


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _cell(text: str) -> str:
    return " ".join(text.replace("``", "`").replace("|", "\\|").split())
