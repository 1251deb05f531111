"""Which MCP servers the session says codex has, from codex's startup reports (sans IO)."""

from __future__ import annotations

from rawp_adapter_codex._mcp import McpStartup
from rawp_adapter_codex._wire import McpServerStatusNotification


def status(name: str, state: str, error: str | None = None) -> McpServerStatusNotification:
    return McpServerStatusNotification.model_validate(
        {"threadId": "t", "name": name, "status": state, "error": error}
    )


def test_it_settles_once_every_server_is_ready_or_failed_and_names_the_failed_one() -> None:
    startup = McpStartup(["dead", "local", "remote"])
    for note in (
        status("local", "starting"),
        status("dead", "failed", "exited"),
        status("x", "ready"),
    ):
        startup.update(note)
    assert not startup.settled.is_set()
    startup.update(status("remote", "ready"))
    assert not startup.settled.is_set()
    startup.update(status("local", "ready"))
    assert startup.settled.is_set()
    assert startup.started() == ["local", "remote"]
    assert startup.refused() == {"dead": "exited"}


def test_a_server_never_reported_is_refused_and_no_servers_is_settled_at_once() -> None:
    startup = McpStartup(["slow"])
    startup.update(status("slow", "starting"))
    assert startup.started() == []
    assert startup.refused() == {"slow": "codex did not report it started"}
    assert McpStartup([]).settled.is_set()
