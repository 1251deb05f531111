"""The pipes of an agent process, made by the host and used from its event loop: one
``os.read`` or ``os.write`` per step, no transport buffering in between."""

from __future__ import annotations

import os

import anyio
import anyio.abc
import anyio.lowlevel


class PipeEnd:
    """One end of a pipe, used from the event loop itself (non-blocking). Closing closes
    the pipe."""

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self._fd = fd

    def close(self) -> None:
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            anyio.notify_closing(fd)
            os.close(fd)

    async def aclose(self) -> None:
        self.close()
        await anyio.lowlevel.checkpoint()


class PipeReceiveStream(PipeEnd, anyio.abc.ByteReceiveStream):
    """The read end of a pipe: one ``os.read`` per receive, not a transport reading into
    a stream buffer that a receive copies out of again."""

    async def receive(self, max_bytes: int = 65536) -> bytes:
        await anyio.lowlevel.checkpoint()  # data may never run out: let others run
        while True:
            if self._fd < 0:
                raise anyio.ClosedResourceError
            try:
                data = os.read(self._fd, max_bytes)
            except BlockingIOError:
                await anyio.wait_readable(self._fd)
                continue
            except OSError as exc:
                raise anyio.BrokenResourceError from exc
            if not data:
                raise anyio.EndOfStream
            return data


class PipeSendStream(PipeEnd, anyio.abc.ByteSendStream):
    """The write end of a pipe."""

    async def send(self, item: bytes) -> None:
        await anyio.lowlevel.checkpoint()
        view = memoryview(item)
        while view:
            if self._fd < 0:
                raise anyio.ClosedResourceError
            try:
                view = view[os.write(self._fd, view) :]
            except BlockingIOError:
                await anyio.wait_writable(self._fd)
            except OSError as exc:
                raise anyio.BrokenResourceError from exc


class AgentPipes:
    """The agent's stdin, stdout and stderr pipes: the host's ends as streams, and the
    agent's ends until :meth:`spawned` (the agent has its own copies then)."""

    def __init__(self) -> None:
        made: list[int] = []
        try:
            for _ in range(3):
                made += os.pipe()
        except OSError:
            for fd in made:
                os.close(fd)
            raise
        stdin_read, stdin_write, stdout_read, stdout_write, stderr_read, stderr_write = made
        self.agent_ends: tuple[int, ...] = (stdin_read, stdout_write, stderr_write)
        self.host_ends = (stdin_write, stdout_read, stderr_read)
        self.stdin = PipeSendStream(stdin_write)
        self.stdout = PipeReceiveStream(stdout_read)
        self.stderr = PipeReceiveStream(stderr_read)

    def spawned(self) -> None:
        for fd in self.agent_ends:
            os.close(fd)
        self.agent_ends = ()

    def close(self) -> None:
        """Close every end still open (no checkpoint: safe in a cancelled scope)."""
        if self.agent_ends:
            self.spawned()
        for stream in (self.stdin, self.stdout, self.stderr):
            stream.close()
