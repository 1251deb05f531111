"""RAWP-DPS adapter for any Agent Client Protocol (ACP) agent, run as a child process.

An ACP agent is a process agent: the adapter states ``adapter_type: "process"`` and is
registered as ``process.acp``, so a Master that knows only ``process`` reaches it with
``settings.protocol: "acp"``::

    from rawp_adapters import AgentMetadata, create_adapter

    adapter = create_adapter(
        AgentMetadata(
            adapter_type="process",
            settings={"protocol": "acp", "command": ["omp", "--mode", "acp"]},
        )
    )

It drives the agent with the maintained Python ACP SDK (``agent-client-protocol``).
Modules: ``_settings`` (:class:`AcpSettings`), ``_bridge`` (where the asyncio-only SDK
runs), ``_agent`` (the SDK side: transport, client methods, requests), ``_translate``
(updates → DPS payloads, sans I/O), ``_models`` (the advertised model and thinking
level, sans I/O), ``_adapter`` (:class:`AcpAdapter`). The agent process
is :class:`rawp_adapters.processes.AgentProcess`. The mapping is in ``specs/acp.md``.
"""

from rawp_adapter_acp._adapter import AcpAdapter, choose_option
from rawp_adapter_acp._settings import AcpSettings

__all__ = ["AcpAdapter", "AcpSettings", "choose_option"]
