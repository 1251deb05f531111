"""Where an installation's warm server listens, and the wire both ends speak.

The launcher imports this at every start, so it keeps to the standard library's
cheapest modules (no ``json``, ``pathlib`` or ``typing``: each costs milliseconds).
One server per installation and interpreter setup: the key covers the interpreter, its
flags and its ``sys.path``, so a launcher never reaches a server that would import
other code than it would.

The wire: the launcher sends the length of its request, then the request
(:mod:`marshal`: both ends are the same interpreter), with its stdin, stdout and stderr
attached (``SCM_RIGHTS``). The server answers with ASCII lines: ``pid N`` once it has
forked the session's process, then ``status S`` (its wait status) when that process
has ended; or one ``refused REASON`` instead.
"""

from __future__ import annotations

import os
import resource
import struct
import sys
import zlib

DIR_ENV = "RAWP_ADAPTERS_WARM_DIR"
"""Where the servers' sockets live (default ``$XDG_RUNTIME_DIR/rawp-adapters``, else
``$TMPDIR/rawp-adapters-<uid>``); made mode 0700, and refused unless the user's own."""
IDLE_ENV = "RAWP_ADAPTERS_WARM_IDLE_S"
"""Seconds a server with no session waits for one before it exits (default 600)."""
DEFAULT_IDLE_S = 600.0
START_WAIT_S = 30.0
"""How long a launcher waits for a server it started to listen, and a server that has
just started for its first start, however short its idle time (that launcher is on
its way)."""

_SOCKET_PATH_MAX = 107
LENGTH = struct.Struct("!I")
FDS = struct.Struct("3i")
"""The handed descriptors as ``SCM_RIGHTS`` carries them."""
MAX_REQUEST_BYTES = 16 * 1024 * 1024
"""A request holds the launcher's environment; anything larger is refused."""
HANDED_FDS = (0, 1, 2)
"""stdin, stdout and stderr, handed to the server with the request."""

LIMITS = (
    resource.RLIMIT_NOFILE,
    resource.RLIMIT_NPROC,
    resource.RLIMIT_AS,
    resource.RLIMIT_DATA,
    resource.RLIMIT_STACK,
    resource.RLIMIT_CORE,
    resource.RLIMIT_CPU,
    resource.RLIMIT_FSIZE,
    resource.RLIMIT_MEMLOCK,
)
"""The launcher's resource limits the session's process takes on (its ``ulimit``)."""

REFUSED_STALE = "stale"
"""The server's loaded code changed on disk since it started: start a fresh one."""


class Refused(Exception):
    """The warm path cannot serve this start (the message says why)."""


def server_key() -> str:
    """What a server must share with a launcher to serve it."""
    setup = repr((sys.executable, sys.version, tuple(sys.flags), sys.path))
    return f"{zlib.crc32(setup.encode()):08x}{len(setup):x}"


def runtime_dir() -> str:
    """The user's own directory for the servers' sockets, made if missing."""
    where = os.environ.get(DIR_ENV)
    if not where:
        runtime = os.environ.get("XDG_RUNTIME_DIR")
        if runtime:
            where = os.path.join(runtime, "rawp-adapters")
        else:
            temporary = os.environ.get("TMPDIR") or "/tmp"
            where = os.path.join(temporary, f"rawp-adapters-{os.getuid()}")
    try:
        os.makedirs(where, mode=0o700, exist_ok=True)
        status = os.stat(where)
    except OSError as exc:
        raise Refused(f"cannot make {where}: {exc}") from exc
    if status.st_uid != os.getuid() or status.st_mode & 0o077:
        raise Refused(f"{where} is not private to this user (its owner, mode 0700)")
    return where


def socket_path(where: str, key: str) -> str:
    return os.path.join(where, f"warm-{key}.sock")


def socket_address(path: str) -> str:
    """``path`` as ``bind`` and ``connect`` take it: one longer than a socket address
    holds (107 bytes) is reached through a descriptor of its directory, kept open for
    the process's life (``/proc/self/fd/N/NAME``)."""
    if len(os.fsencode(path)) <= _SOCKET_PATH_MAX:
        return path
    directory = os.open(os.path.dirname(path), os.O_PATH)
    return f"/proc/self/fd/{directory}/{os.path.basename(path)}"


def lock_path(where: str, key: str) -> str:
    return os.path.join(where, f"warm-{key}.lock")


def log_path(where: str, key: str) -> str:
    return os.path.join(where, f"warm-{key}.log")


def idle_seconds() -> float:
    try:
        return float(os.environ.get(IDLE_ENV) or DEFAULT_IDLE_S)
    except ValueError:
        return DEFAULT_IDLE_S


def unpack_length(head: bytes) -> int:
    """The length of a request from its first bytes; ``ValueError`` past the bound."""
    (length,) = LENGTH.unpack(head)
    if length > MAX_REQUEST_BYTES:
        raise ValueError(f"a start of {length} bytes")
    return int(length)
