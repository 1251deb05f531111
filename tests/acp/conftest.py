"""One scripted model server per wire format for every ACP test module."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack

import pytest

from tests.support.llm_anthropic import ScriptedAnthropic
from tests.support.llm_gemini import ScriptedGemini
from tests.support.llm_openai import ScriptedOpenAI
from tests.support.llm_responses import ScriptedResponses


@pytest.fixture(scope="session")
def servers() -> Iterator[dict[str, str]]:
    """``http://127.0.0.1:PORT`` per wire format (see ``tests.acp.agents.wire_format``)."""
    with ExitStack() as stack:
        openai = stack.enter_context(ScriptedOpenAI())
        anthropic = stack.enter_context(ScriptedAnthropic())
        responses = stack.enter_context(ScriptedResponses())
        gemini = stack.enter_context(ScriptedGemini())
        yield {
            "openai": openai.base_url.removesuffix("/v1"),
            "anthropic": anthropic.base_url.removesuffix("/v1"),
            "responses": responses.base_url.removesuffix("/v1"),
            "gemini": gemini.base_url,
        }
