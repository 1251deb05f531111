"""A griffe extension (``mkdocs.yml``: the python handler's ``extensions``): the
project's docstrings are written in reStructuredText (``code``, :class:`Name`,
``Example::`` blocks); the API reference renders them as Markdown."""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|data|attr|exc|obj|const):`(~?)([^`]+)`")
_LITERAL = re.compile(r"``([^`]+)``")
_BLOCK_INTRO = re.compile(r"(\S)::\n\n", re.MULTILINE)


def markdown_docstring(text: str) -> str:
    """RST roles and literals as Markdown code spans (``~`` keeps the last name, as in
    Sphinx); ``text::`` before an indented block as ``text:`` (the indented block is a
    Markdown code block as it is)."""
    text = _ROLE.sub(_role, text)
    text = _LITERAL.sub(lambda m: f"`{m.group(1)}`", text)
    return _BLOCK_INTRO.sub(lambda m: f"{m.group(1)}:\n\n", text)


def _role(match: re.Match[str]) -> str:
    short, name = match.groups()
    return f"`{name.rsplit('.', 1)[-1] if short else name}`"


class ReStructuredTextRoles(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        _convert(pkg)

    def on_object(self, *, obj: griffe.Object, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        _convert(obj)


def _convert(obj: griffe.Object) -> None:
    if obj.docstring is not None:
        obj.docstring.value = markdown_docstring(obj.docstring.value)
