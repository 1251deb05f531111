"""The OpenAI Agents SDK as a core of the rawp-adapters ``sdk`` adapter (``core=openai-agents``)."""

from rawp_core_openai_agents.core import OpenAIAgentsCore

__all__ = ["OpenAIAgentsCore"]
