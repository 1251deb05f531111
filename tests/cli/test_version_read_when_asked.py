"""``rawp-adapters --version`` reads the installed version from the package metadata,
and only then: a bridge started per session does not search ``sys.path`` for it."""

from __future__ import annotations

import importlib.metadata

import pytest

from rawp_adapters.cli import build_parser

SERVE = ["serve", "--stdio", "--adapter", "process", "--settings-json", "{}"]


def test_the_version_is_read_only_when_asked(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    asked: list[str] = []

    def version(distribution: str) -> str:
        asked.append(distribution)
        return "9.8.7"

    monkeypatch.setattr(importlib.metadata, "version", version)
    build_parser().parse_args(SERVE)
    assert asked == []

    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["--version"])
    assert exited.value.code == 0
    assert asked == ["rawp-adapters"]
    assert capsys.readouterr().out == "rawp-adapters 9.8.7\n"
