"""The GitHub Copilot SDK as an SDK core of rawp-adapters: the Copilot CLI, run against
an OpenAI-compatible provider of one's own (no GitHub login), its blocking permission
callback bridged to the Master."""

from rawp_core_copilot._core import INSTALL_HINT, CopilotCore

__all__ = ["INSTALL_HINT", "CopilotCore"]
