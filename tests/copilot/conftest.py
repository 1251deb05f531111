"""Fixtures of the copilot core's tests: the project's scripted OpenAI-compatible server
on 127.0.0.1, which the Copilot CLI reaches over HTTP like a real provider, and the CLI
that scripts/install-copilot installed (the tests skip, saying so, without it)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.llm_openai import ScriptedOpenAI

ROOT = Path(__file__).resolve().parents[2]
INSTALLED = ROOT / ".cache" / "copilot" / "node_modules" / "@github"


def installed_cli() -> Path | None:
    """The CLI of scripts/install-copilot (its platform's package), if there."""
    for candidate in sorted(INSTALLED.glob("copilot-*/copilot")):
        if os.access(candidate, os.X_OK):
            return candidate
    return None


@pytest.fixture
def copilot_cli() -> Path:
    cli = installed_cli()
    if cli is None:
        pytest.skip("the Copilot CLI is not installed (scripts/install-copilot installs it)")
    return cli


@pytest.fixture
def llm() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI() as server:
        yield server
    assert server.violations == []  # the scripted model called only offered tools
