"""Which of the session's MCP servers codex started: it starts them with the thread and
reports each (``mcpServer/startupStatus/updated``) while the thread is ready already, so
the session waits for every one to be ``ready`` or not before it says which it has."""

from __future__ import annotations

import anyio

from rawp_adapter_codex._wire import McpServerStatusNotification


class McpStartup:
    def __init__(self, names: list[str]) -> None:
        self._names = names
        self._starting = set(names)
        self._failed: dict[str, str] = {}
        self.settled = anyio.Event()
        """Set once every server is ready or failed."""
        if not names:
            self.settled.set()

    def update(self, note: McpServerStatusNotification) -> None:
        if note.name not in self._starting or note.status == "starting":
            return
        self._starting.discard(note.name)
        if note.status != "ready":
            self._failed[note.name] = note.error or f"its start was {note.status}"
        if not self._starting:
            self.settled.set()

    def started(self) -> list[str]:
        """The servers codex has, in the settings' order."""
        return [n for n in self._names if n not in self._failed and n not in self._starting]

    def refused(self) -> dict[str, str]:
        """Each server codex does not have, and why."""
        late = dict.fromkeys(self._starting, "codex did not report it started")
        return self._failed | late
