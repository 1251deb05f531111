"""A pydantic-ai ``Agent`` as an SDK core of rawp-adapters, registered as
``pydantic-ai`` in ``rawp_adapters.sdk_cores``::

    AgentMetadata(
        adapter_type="sdk",
        settings={"core": "pydantic-ai", "core_options": {"model": "gpt-4.1", "base_url": …}},
    )

Tools that need approval end a pydantic-ai run with ``DeferredToolRequests``; each
becomes a PERMISSION question of the Master, and the run goes on with the
``DeferredToolResults`` (approved, or ``ToolDenied`` with what the model is told).
The Master's published tools are external tools of the agent, called through the
session. pydantic-ai runs only on asyncio: a trio session runs it on an asyncio loop in
a thread of the core's own.
"""

from rawp_core_pydantic_ai._core import INSTALL_HINT, PydanticAiCore

__all__ = ["INSTALL_HINT", "PydanticAiCore"]
