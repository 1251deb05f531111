"""A checked session on the pydantic-ai core against the scripted server (shared by
the core's tests)."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from rawp_adapter_sdk import SdkAdapter

from rawp_adapters import SessionOptions
from rawp_adapters.testing import Policy, SessionDriver, allow_all, drive
from tests.support.llm_openai import ScriptedOpenAI

SDK_THREAD = "rawp-pydantic-ai"
WRITE_TOOL = {"path": "notes.txt", "content": "hello"}
WRITE_PROMPT = "WRITE_FILE notes.txt hello"


def core_settings(llm: ScriptedOpenAI, **options: Any) -> dict[str, Any]:
    return {
        "core": "pydantic-ai",
        "core_options": {"model": "fake-model", "base_url": llm.base_url, "max_retries": 0}
        | options,
    }


def sdk_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == SDK_THREAD]


@asynccontextmanager
async def pydantic_ai_session(
    llm: ScriptedOpenAI,
    workspace: Path,
    *,
    policy: Policy = allow_all,
    timeout_ms: int = 30_000,
    session_options: SessionOptions | None = None,
    **options: Any,
) -> AsyncIterator[SessionDriver[Any]]:
    """A checked session on the core; on exit, asserts the SDK's thread is gone."""
    before = sdk_threads()
    adapter = SdkAdapter.from_settings(
        core_settings(llm, **options) | {"permission_timeout_ms": timeout_ms}
    )
    async with drive(
        adapter,
        workspace=workspace,
        policy=policy,
        timeout=30,
        options=session_options or SessionOptions(),
    ) as d:
        yield d
    assert [t for t in sdk_threads() if t not in before] == []
