"""RAWP-DPS adapter for xcsh-family RPC agents (xcsh, oh-my-pi, pi) run as child processes.

Registered as ``adapter_type: "process"``::

    from rawp_adapters import AgentMetadata, create_adapter, open_session

    adapter = create_adapter(
        AgentMetadata(adapter_type="process", settings={"command": ["omp", "--mode", "rpc"]})
    )

One long-lived ``--mode rpc`` process per session by default (``single_turn_process``:
one ``--mode json`` process per prompt). Tool calls are gated by the bundled extension
(:data:`EXTENSION_PATH`, loaded with ``-e``) or by omp's ``--approval-mode``; see
:class:`ProcessSettings` for every option.

Modules: ``_settings`` (settings), ``_wire`` (typed decoding of the agent's lines),
``_translate`` (sans-IO events → DPS payloads), ``_dialogs`` (sans-IO dialogs →
interactions), ``_commands`` (command/answer matching), ``_reader`` (stdout → messages),
``_launch`` (argv, env), ``_rpc`` / ``_single_turn`` (the two modes), ``_adapter`` (the
:class:`ProcessAdapter`). The agent process itself is
:class:`rawp_adapters.processes.AgentProcess`.
"""

from rawp_adapter_process._adapter import ProcessAdapter
from rawp_adapter_process._launch import EXTENSION_PATH
from rawp_adapter_process._settings import ProcessSettings, SingleTurnSettings

__all__ = ["EXTENSION_PATH", "ProcessAdapter", "ProcessSettings", "SingleTurnSettings"]
