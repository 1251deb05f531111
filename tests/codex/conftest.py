"""One scripted Responses server per test module, checked for calls of tools a request
did not offer; the codex binary, or a skip that says how to install it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.codex.agent import codex_binary
from tests.support.llm_responses import ScriptedResponses


@pytest.fixture(scope="module")
def llm() -> Iterator[ScriptedResponses]:
    with ScriptedResponses() as server:
        yield server
    assert server.violations == []


@pytest.fixture(scope="session")
def codex_bin() -> Path:
    binary = codex_binary()
    if binary is None:
        pytest.skip("codex is not installed: run scripts/install-codex")
    return binary
