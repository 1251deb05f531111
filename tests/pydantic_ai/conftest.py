"""Fixtures of the pydantic-ai core's tests: the project's scripted OpenAI-compatible
server on 127.0.0.1, which the core reaches over HTTP like a real provider."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.llm_openai import ScriptedOpenAI


@pytest.fixture
def llm() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI() as server:
        yield server
    assert server.violations == []  # the scripted model called only offered tools
