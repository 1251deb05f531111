"""rawp-adapters: run any coding agent behind one standard stream of RAWP-DPS frames.

The public surface, in a few lines::

    from rawp_adapters import AgentMetadata, create_adapter, open_session

    adapter = create_adapter(AgentMetadata(adapter_type="process", settings={...}))
    async with open_session(adapter, workspace="/abs/dir") as session:
        await session.send(session.control.prompt("hello"))
        async for frame in session:          # session.capabilities first,
            ...                              # session.closed last

Frame models live in :mod:`rawp_adapters.frames`; adapter authors subclass
:class:`Adapter` and find plugin plumbing in :mod:`rawp_adapters.plugins`;
:mod:`rawp_adapters.testing` has a Master driver, an invariant checker and a
conformance run for any adapter.

Each name is imported from its module when first used: a ``serve --stdio`` bridge
imports only what it runs.
"""

from rawp_adapters._lazy import lazy_exports

TYPE_CHECKING = False  # typing's own costs the warm launcher (this package) milliseconds

if TYPE_CHECKING:
    from rawp_adapters._adapter import (
        Adapter,
        AdapterSettings,
        AgentExit,
        AgentMetadata,
        CloseResult,
        HostToolCall,
        HostToolOutcome,
        InteractionOutcome,
        ModelState,
        Progress,
        Question,
        SessionContext,
        Turn,
        TurnResult,
    )
    from rawp_adapters._codec import decode_frame, encode_frame
    from rawp_adapters._control import ControlFrames
    from rawp_adapters._errors import (
        AdapterLoadError,
        AdapterNotFoundError,
        AgentFailure,
        FrameError,
        GuardError,
        InvalidSettingsError,
        OperationRejected,
        RawpError,
        SessionClosedError,
        StartFailed,
        UnsupportedOperation,
        WorkspaceError,
    )
    from rawp_adapters._frames import DPS_VERSION, ClientFrame, ControlFrame, Frame
    from rawp_adapters._framing import LineFramer, OversizedLine
    from rawp_adapters._mcp import McpServer, McpServers, mcp_server_refused
    from rawp_adapters._registry import InstalledAdapter, create_adapter, installed_adapters
    from rawp_adapters._session import Session, SessionOptions, open_session

__all__ = [
    "DPS_VERSION",
    "Adapter",
    "AdapterLoadError",
    "AdapterNotFoundError",
    "AdapterSettings",
    "AgentExit",
    "AgentFailure",
    "AgentMetadata",
    "ClientFrame",
    "CloseResult",
    "ControlFrame",
    "ControlFrames",
    "Frame",
    "FrameError",
    "GuardError",
    "HostToolCall",
    "HostToolOutcome",
    "InstalledAdapter",
    "InteractionOutcome",
    "InvalidSettingsError",
    "LineFramer",
    "McpServer",
    "McpServers",
    "ModelState",
    "OperationRejected",
    "OversizedLine",
    "Progress",
    "Question",
    "RawpError",
    "Session",
    "SessionClosedError",
    "SessionContext",
    "SessionOptions",
    "StartFailed",
    "Turn",
    "TurnResult",
    "UnsupportedOperation",
    "WorkspaceError",
    "create_adapter",
    "decode_frame",
    "encode_frame",
    "installed_adapters",
    "mcp_server_refused",
    "open_session",
]

if not TYPE_CHECKING:  # checkers read the imports above
    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "rawp_adapters._adapter": (
                "Adapter",
                "AdapterSettings",
                "AgentExit",
                "AgentMetadata",
                "CloseResult",
                "HostToolCall",
                "HostToolOutcome",
                "InteractionOutcome",
                "ModelState",
                "Progress",
                "Question",
                "SessionContext",
                "Turn",
                "TurnResult",
            ),
            "rawp_adapters._codec": ("decode_frame", "encode_frame"),
            "rawp_adapters._mcp": ("McpServer", "McpServers", "mcp_server_refused"),
            "rawp_adapters._control": ("ControlFrames",),
            "rawp_adapters._errors": (
                "AdapterLoadError",
                "AdapterNotFoundError",
                "AgentFailure",
                "FrameError",
                "GuardError",
                "InvalidSettingsError",
                "OperationRejected",
                "RawpError",
                "SessionClosedError",
                "StartFailed",
                "UnsupportedOperation",
                "WorkspaceError",
            ),
            "rawp_adapters._frames": ("DPS_VERSION", "ClientFrame", "ControlFrame", "Frame"),
            "rawp_adapters._framing": ("LineFramer", "OversizedLine"),
            "rawp_adapters._registry": ("InstalledAdapter", "create_adapter", "installed_adapters"),
            "rawp_adapters._session": ("Session", "SessionOptions", "open_session"),
        },
    )
