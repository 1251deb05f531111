"""A Master whose agent may hand tasks to a sub-agent of another adapter."""

from __future__ import annotations

from rawp_adapters import AgentMetadata
from rawp_adapters.frames import InteractionRequest
from rawp_adapters.host import DelegatedRequest, Delegation, HostTools, Reply

asked: list[str] = []


def delegating_tools(sub_agent: AgentMetadata) -> HostTools:
    """A ``Task`` tool: each call runs ``sub_agent`` in the same workspace, streams its
    text into the parent's stream and answers with its final text."""
    return HostTools(
        [
            Delegation(
                sub_agent,
                allowed_tools=["Read", "Grep", "write_file"],  # never more than the parent's
                max_depth=1,  # sub-agents may not delegate further
                max_concurrent=2,
            )
        ]
    )


def policy(request: InteractionRequest) -> Reply:
    """The Master decides for its agent and for every sub-agent (told apart by the chain)."""
    if isinstance(request, DelegatedRequest):
        parent = request.delegation_chain[-1]
        asked.append(f"sub-agent of {parent.invocation_id} asks for {request.context.tool_name}")
    return Reply.deny() if request.context.tool_name == "Bash" else Reply.allow()
