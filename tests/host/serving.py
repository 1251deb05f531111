"""A Master that serves one session with serve_host: prompts, records every frame and
closes the session after the turn's end."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TypeVar

import anyio

from rawp_adapters import Adapter, ClientFrame, SessionOptions, open_session
from rawp_adapters.frames import Envelope, TextDeltaFrame, TurnEndFrame
from rawp_adapters.host import HostTools, Policy, deny_all, serve_host
from rawp_adapters.testing import assert_valid_stream

WAIT = 20.0
F = TypeVar("F", bound=Envelope)


class Served:
    """The frames of one served session, in order."""

    def __init__(self) -> None:
        self.frames: list[ClientFrame] = []
        self.published: list[str] = []

    def of_type(self, frame_type: type[F]) -> list[F]:
        return [frame for frame in self.frames if isinstance(frame, frame_type)]

    @property
    def text(self) -> str:
        """What the agent said (its text deltas)."""
        return "".join(f.payload.text for f in self.of_type(TextDeltaFrame))


async def serve_prompt(
    adapter: Adapter,
    workspace: Path,
    tools: HostTools | None = None,
    policy: Policy = deny_all,
    *,
    prompt: str = "go",
    options: SessionOptions | None = None,
    abort_when: type[Envelope] | None = None,
    end_when: type[Envelope] | None = None,
    abort_on: anyio.Event | None = None,
    timeout: float = WAIT,
) -> Served:
    """Serve a session of ``adapter`` with ``tools`` and ``policy`` through one prompt
    (aborted at the first ``abort_when`` frame, or the session ended at the first
    ``end_when`` frame, or aborted once ``abort_on`` is set, if given); the stream must
    be valid."""
    served = Served()
    with anyio.fail_after(timeout):
        async with (
            open_session(adapter, workspace=workspace, options=options) as session,
            anyio.create_task_group() as tg,
        ):

            def on_frame(frame: ClientFrame) -> None:
                nonlocal abort_when
                served.frames.append(frame)
                if isinstance(frame, TurnEndFrame):
                    tg.start_soon(session.close)
                elif abort_when is not None and isinstance(frame, abort_when):
                    tg.start_soon(session.send, session.control.abort())
                    abort_when = None
                elif end_when is not None and isinstance(frame, end_when):
                    tg.start_soon(session.close)

            served.published = await tg.start(
                partial(serve_host, session, tools, policy, on_frame=on_frame)
            )
            await session.send(session.control.prompt(prompt))
            if abort_on is not None:
                await abort_on.wait()
                await session.send(session.control.abort())
    assert_valid_stream(served.frames)
    return served
