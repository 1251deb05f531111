"""One scripted model server per wire format for every ACP test module."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from tests.acp.overtake import anthropic_replies
from tests.acp.plans import openai_plan
from tests.support._scripted_http import ScriptedServer
from tests.support.llm_anthropic import ScriptedAnthropic
from tests.support.llm_gemini import ScriptedGemini
from tests.support.llm_openai import ScriptedOpenAI
from tests.support.llm_responses import ScriptedResponses


@pytest.fixture(scope="session")
def scripted() -> Iterator[dict[str, ScriptedServer[Any]]]:
    """The scripted model server per wire format (see ``tests.acp.agents.wire_format``);
    ``WRITE_PLAN`` works on each (``tests.acp.plans``), ``OVERTAKE_BASH`` on the Anthropic
    one (``tests.acp.overtake``)."""
    with ExitStack() as stack:
        yield {
            "openai": stack.enter_context(ScriptedOpenAI(responder=openai_plan)),
            "anthropic": stack.enter_context(ScriptedAnthropic(responder=anthropic_replies)),
            "responses": stack.enter_context(ScriptedResponses()),
            "gemini": stack.enter_context(ScriptedGemini()),
        }


@pytest.fixture(scope="session")
def servers(scripted: dict[str, ScriptedServer[Any]]) -> dict[str, str]:
    """``http://127.0.0.1:PORT`` per wire format (see ``tests.acp.agents.wire_format``)."""
    openai, anthropic = scripted["openai"], scripted["anthropic"]
    responses, gemini = scripted["responses"], scripted["gemini"]
    return {
        "openai": openai.base_url.removesuffix("/v1"),
        "anthropic": anthropic.base_url.removesuffix("/v1"),
        "responses": responses.base_url.removesuffix("/v1"),
        "gemini": gemini.base_url,
    }
