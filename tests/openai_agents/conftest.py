"""Fixtures of the OpenAI Agents SDK core's tests: the scripted Chat Completions server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from rawp_adapter_sdk import SdkAdapter

from tests.support.llm_openai import ScriptedOpenAI


@pytest.fixture
def llm() -> Iterator[ScriptedOpenAI]:
    """The scripted model; a test fails if the core let it call a tool it did not offer."""
    with ScriptedOpenAI() as server:
        yield server
    assert server.violations == []


def core(
    llm: ScriptedOpenAI, *, permission_timeout_ms: int | None = None, **options: Any
) -> SdkAdapter:
    """The sdk adapter with the openai-agents core on ``llm`` (no HTTP retries)."""
    return SdkAdapter.from_settings(
        {
            "core": "openai-agents",
            "permission_timeout_ms": permission_timeout_ms,
            "core_options": {
                "base_url": llm.base_url,
                "api_key": "scripted",
                "model": llm.model,
                "max_retries": 0,
                **options,
            },
        }
    )
