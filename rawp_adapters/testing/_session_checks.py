"""What every session a conformance rule opens is checked for, besides the rule's own
checks: its capabilities, its stream against the invariants, the features it claims
and the processes it left behind."""

from __future__ import annotations

from collections.abc import Iterable

import anyio
import psutil

from rawp_adapters._frames import (
    AgentErrorFrame,
    Features,
    SessionCapabilitiesFrame,
    ToolCatalogUpdatedFrame,
    ToolInvokeRequestFrame,
)
from rawp_adapters._protocol import FORGED_FRAME
from rawp_adapters.host import SessionLike
from rawp_adapters.processes import host_supervisor, marked_processes, running
from rawp_adapters.testing._driver import SessionDriver
from rawp_adapters.testing._invariants import check_frames
from rawp_adapters.testing._outcomes import fail


def claimed_features(d: SessionDriver[SessionLike]) -> Features:
    """The features the session's ``session.capabilities`` claims."""
    return d.of_type(SessionCapabilitiesFrame)[0].payload.features


def check_capabilities(
    d: SessionDriver[SessionLike], caps: SessionCapabilitiesFrame, expected: str
) -> None:
    """``session.capabilities`` comes first and states ``expected`` as the adapter type."""
    if d.frames[0] is not caps:
        fail("capabilities-first", f"the first frame is {d.frames[0].type}", d, 0)
    stated = (caps.payload.adapter_type, caps.payload.features.adapter_type)
    if stated != (expected, expected):
        fail(
            "capabilities-first",
            f"session.capabilities states adapter_type {stated[0]!r} and "
            f"features.adapter_type {stated[1]!r}; a Master reaches this adapter as "
            f"{expected!r}",
            d,
            0,
        )


def check_stream(d: SessionDriver[SessionLike]) -> None:
    violations = check_frames(d.transcript)
    if violations:
        first = violations[0]
        fail(
            f"invariants/{first.rule}",
            "the stream breaks the DPS rules:\n" + "\n".join(map(str, violations)),
            d,
            first.index,
        )


def check_runtime_owned(d: SessionDriver[SessionLike]) -> None:
    """The runtime drops a frame only it may emit and says so; the adapter is at fault."""
    forged = FORGED_FRAME.split("{frame_type}")
    for index, frame in enumerate(d.frames):
        if isinstance(frame, AgentErrorFrame) and frame.payload.message.startswith(forged[0]):
            fail(
                "runtime-owned-frames",
                f"{frame.payload.message}: turns, questions, state, session errors and "
                "session.closed are the session runtime's to say, never the adapter's",
                d,
                index,
            )


def check_features(d: SessionDriver[SessionLike], features: Features) -> None:
    claimed = {
        "thinking": ("agent.thinking.",),
        "tool_events": ("tool.invoke.",),
        "permission_requests": ("agent.interaction.request",),
    }
    # Host tool calls are the runtime's frames, there with host_tools alone.
    host_calls = {
        frame.payload.invocation_id
        for frame in d.of_type(ToolInvokeRequestFrame)
        if features.host_tools and frame.payload.tool_name in _published(d)
    }
    for feature, prefixes in claimed.items():
        if getattr(features, feature):
            continue
        for index, frame in enumerate(d.frames):
            if frame.type.startswith(prefixes) and (
                feature != "permission_requests"
                or getattr(frame.payload, "interaction_type", None) == "PERMISSION"
            ):
                if getattr(frame.payload, "invocation_id", None) in host_calls:
                    continue
                fail(
                    "honest-features",
                    f"{frame.type} from an adapter whose capabilities say {feature}: false",
                    d,
                    index,
                )


def _published(d: SessionDriver[SessionLike]) -> set[str]:
    return {name for frame in d.of_type(ToolCatalogUpdatedFrame) for name in frame.payload.tools}


async def check_processes(d: SessionDriver[SessionLike], before: set[int], started: float) -> None:
    """No process of the session runs any more: none carrying its ``RAWP_SESSION_ID``
    and no descendant of this process that was not there ``before``."""
    marker = ("RAWP_SESSION_ID", d.session.session_id)
    marked = await anyio.to_thread.run_sync(
        lambda: marked_processes(marker, created_after=started - 1.0)
    )
    new = (await anyio.to_thread.run_sync(descendants)) - before - {host_supervisor().pid}
    left = sorted({p.pid for p in marked} | new)
    if left:
        fail(
            "no-process-left",
            f"after session.closed these processes of the session still run: {_describe(left)}",
            d,
            len(d.frames) - 1,
        )


def descendants() -> set[int]:
    """This process's running descendants (zombies excluded)."""
    found = set()
    for child in psutil.Process().children(recursive=True):
        if running(child):
            found.add(child.pid)
    return found


def _describe(pids: Iterable[int]) -> str:
    parts = []
    for pid in pids:
        try:
            parts.append(f"{pid} ({' '.join(psutil.Process(pid).cmdline())[:80]})")
        except psutil.Error:
            parts.append(str(pid))
    return ", ".join(parts)
