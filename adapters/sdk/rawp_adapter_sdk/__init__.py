"""RAWP-DPS adapter for in-process agent cores.

An agent library implements :class:`AgentCore` (stream the core events of
:mod:`rawp_adapter_sdk.events`, ask a :data:`PermissionCallback` before a tool runs,
accept :meth:`AgentCore.cancel`), and :class:`CompactingCore` / :class:`ModeSwitchingCore`
/ :class:`HostToolCore` / :class:`SteeringCore` / :class:`ModelCore` for what else it
can do, and registers a factory in the ``rawp_adapters.sdk_cores`` entry-point group.
The ``sdk`` adapter runs it in the client's process::

    from rawp_adapters import AgentMetadata, create_adapter

    adapter = create_adapter(
        AgentMetadata(adapter_type="sdk", settings={"core": "claude", "core_options": {...}})
    )

The built-in cores are ``demo`` (the default: scripted, offline) and ``claude``
(claude-agent-sdk, installed with the ``claude`` extra). :class:`FunctionCore` (from
:mod:`rawp_adapter_sdk.testing`) replies with your own function, for tests without a
network.
"""

from rawp_adapter_sdk._adapter import DEFAULT_CORE, SdkAdapter, SdkSettings
from rawp_adapter_sdk._bridge import PermissionBridge, deny_message
from rawp_adapter_sdk._core import (
    CORE_ENTRY_POINT_GROUP,
    AgentCore,
    Allow,
    CompactingCore,
    Compaction,
    CoreEnvironment,
    CoreError,
    CoreFactory,
    CoreFeatures,
    Deny,
    DenyReason,
    HostToolCaller,
    HostToolCore,
    InstalledCore,
    McpCore,
    ModelCore,
    ModeSwitchingCore,
    PermissionCallback,
    PermissionDecision,
    PermissionRequest,
    SteeringCore,
    create_core,
    installed_cores,
    load_core_factory,
    require_installed_core,
)
from rawp_adapter_sdk.testing import FunctionCore

__all__ = [
    "CORE_ENTRY_POINT_GROUP",
    "DEFAULT_CORE",
    "AgentCore",
    "Allow",
    "CompactingCore",
    "Compaction",
    "CoreEnvironment",
    "CoreError",
    "CoreFactory",
    "CoreFeatures",
    "Deny",
    "DenyReason",
    "FunctionCore",
    "HostToolCaller",
    "HostToolCore",
    "InstalledCore",
    "McpCore",
    "ModeSwitchingCore",
    "ModelCore",
    "PermissionBridge",
    "PermissionCallback",
    "PermissionDecision",
    "PermissionRequest",
    "SdkAdapter",
    "SdkSettings",
    "SteeringCore",
    "create_core",
    "deny_message",
    "installed_cores",
    "load_core_factory",
    "require_installed_core",
]
