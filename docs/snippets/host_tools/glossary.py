"""A Master that gives its agent one tool of its own: ``lookup`` in the team glossary."""

from __future__ import annotations

from functools import partial

import anyio

from rawp_adapters import Adapter, ClientFrame, open_session
from rawp_adapters.frames import TurnEndFrame
from rawp_adapters.host import HostTools, Policy, ToolCall, ToolError, allow_all, serve_host

GLOSSARY = {"turn": "one prompt and everything the agent does for it"}

tools = HostTools()


@tools.tool()
async def lookup(word: str, call: ToolCall) -> str:
    """Look a word up in the team glossary."""
    await call.stream(f"looking up {word!r}…\n")  # progress, for the agent and the Master
    if word not in GLOSSARY:
        raise ToolError(f"{word!r} is not in the glossary")  # an error result
    return GLOSSARY[word]


async def ask(
    adapter: Adapter,
    workspace: str,
    prompt: str,
    tools: HostTools = tools,
    policy: Policy = allow_all,
) -> list[ClientFrame]:
    """Run one prompt with ``tools`` published and questions answered by ``policy``;
    the session's frames."""
    frames: list[ClientFrame] = []
    async with (
        open_session(adapter, workspace=workspace) as session,
        anyio.create_task_group() as tg,
    ):

        def on_frame(frame: ClientFrame) -> None:
            frames.append(frame)
            if isinstance(frame, TurnEndFrame):
                tg.start_soon(session.close)

        # One loop answers tool calls and permission questions; start() returns once
        # the agent has the tools (or raises CatalogRefused).
        await tg.start(partial(serve_host, session, tools, policy, on_frame=on_frame))
        await session.send(session.control.prompt(prompt))
    return frames
