"""Fixtures of the scenarios every SDK core plugin must pass: the core (each test runs
once per core) and the scripted model it reaches over HTTP."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.core_scenarios import scripted_core
from tests.support.llm_openai import ScriptedOpenAI

__all__ = ["llm", "scripted_core"]


@pytest.fixture
def llm() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI() as server:
        yield server
    assert server.violations == []  # the scripted model called only offered tools
