"""Fixtures of the SDK adapter's tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.llm_anthropic import ScriptedAnthropic


@pytest.fixture
def api() -> Iterator[ScriptedAnthropic]:
    """A scripted Anthropic API on 127.0.0.1 for the Claude core's CLI."""
    with ScriptedAnthropic() as server:
        yield server
