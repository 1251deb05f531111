"""RAWP-DPS adapter for the Codex app-server (``codex app-server``), run as a child process.

The app-server is a process agent: the adapter states ``adapter_type: "process"`` and is
registered as ``process.codex``, so a Master that knows only ``process`` reaches it with
``settings.protocol: "codex"``::

    from rawp_adapters import AgentMetadata, create_adapter

    adapter = create_adapter(
        AgentMetadata(
            adapter_type="process",
            settings={"protocol": "codex", "command": ["codex", "app-server"]},
        )
    )

Modules: ``_settings`` (:class:`CodexSettings`), ``_rpc`` (the line-delimited JSON-RPC over
the pipes), ``_wire`` (the messages read, checked against the binary's JSON Schema),
``_translate`` (notifications → DPS payloads, sans I/O), ``_models`` (the model and
reasoning effort per turn, sans I/O), ``_adapter``
(:class:`CodexAdapter`). The process is :class:`rawp_adapters.processes.AgentProcess`.
The mapping and its traps are in ``specs/codex.md``.
"""

from rawp_adapter_codex._adapter import CodexAdapter
from rawp_adapter_codex._settings import CodexSettings

__all__ = ["CodexAdapter", "CodexSettings"]
