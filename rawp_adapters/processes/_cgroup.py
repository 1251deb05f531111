"""A cgroup v2 of one agent's own (Linux 5.14 or later, a writable unified hierarchy)."""

from __future__ import annotations

import errno
import re
import time
from contextlib import suppress
from pathlib import Path

import anyio

from rawp_adapters.processes._tree import KILL_POLL_S, KILL_WAIT_S


class SessionCgroup:
    """A cgroup v2 of one agent's own. Every process the agent starts stays in it,
    however it detaches; :meth:`kill_and_wait` ends them all (``cgroup.kill``)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def create(cls, name: str) -> SessionCgroup:
        """Make the cgroup ``name`` inside this process's own one.

        Raises ``OSError`` where cgroup v2 is missing or not writable, and where it
        lacks ``cgroup.kill`` (Linux before 5.14).
        """
        path = _own_cgroup_dir() / name
        path.mkdir()
        cgroup = cls(path)
        if not (path / "cgroup.kill").exists():
            cgroup.remove()
            raise OSError(errno.ENOTSUP, "cgroup.kill needs Linux 5.14 or later", str(path))
        return cgroup

    def admit(self, pid: int) -> None:
        """Move ``pid`` (and later everything it starts) into this cgroup."""
        (self.path / "cgroup.procs").write_text(f"{pid}\n")

    def pids(self) -> list[int]:
        """The processes in it now (none once it is removed)."""
        try:
            return [int(line) for line in (self.path / "cgroup.procs").read_text().split()]
        except FileNotFoundError:
            return []

    def populated(self) -> bool:
        """Some process in it still runs (zombies do not count)."""
        try:
            return "populated 1" in (self.path / "cgroup.events").read_text()
        except FileNotFoundError:
            return False

    async def kill_and_wait(self, timeout: float = KILL_WAIT_S) -> list[int]:
        """SIGKILL every process in it, atomically with respect to forks, and wait until
        none runs (at most ``timeout`` seconds); the pids that survived."""
        with suppress(FileNotFoundError):
            (self.path / "cgroup.kill").write_text("1")
        deadline = time.monotonic() + timeout
        # The kernel reports emptiness in cgroup.events; polling it reads one small file.
        while self.populated():
            if time.monotonic() >= deadline:
                return self.pids()
            await anyio.sleep(KILL_POLL_S)
        return []

    def remove(self) -> None:
        """Delete the (empty) cgroup; ``OSError`` (EBUSY) while a process runs in it."""
        with suppress(FileNotFoundError):
            self.path.rmdir()


def _own_cgroup_dir() -> Path:
    """This process's cgroup v2 directory (``FileNotFoundError`` where there is none)."""
    own = None
    with open("/proc/self/cgroup") as lines:
        for line in lines:
            if line.startswith("0::"):
                own = line[3:].rstrip("\n")
    if own is None:
        raise FileNotFoundError(errno.ENOENT, "this process is in no cgroup v2 hierarchy")
    with open("/proc/self/mountinfo") as lines:
        for line in lines:
            fields, _, fs = line.partition(" - ")
            if fs.split(" ", 1)[0] != "cgroup2":
                continue
            root, mount = (_unescape_mountinfo(f) for f in fields.split(" ")[3:5])
            if own == root or own.startswith(root.rstrip("/") + "/"):
                return Path(mount, own[len(root) :].lstrip("/"))
    raise FileNotFoundError(errno.ENOENT, "no cgroup v2 file system shows this process's cgroup")


def _unescape_mountinfo(field: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)
