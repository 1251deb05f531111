"""A session's process, just forked from the warm server: it takes on the launcher's
stdio, arguments, environment, working directory and umask, then runs the command as a
cold start would, and exits with its code."""

from __future__ import annotations

import contextlib
import os
import resource
import select
import signal
import sys
import threading
import traceback
from typing import Any, NoReturn

from rawp_adapters._warm._place import HANDED_FDS


def run_session(request: dict[str, Any], fds: list[int]) -> NoReturn:
    """Never returns: the process exits with the command's code."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)  # the server's, about to be closed
        os.setsid()
        for target, fd in zip(HANDED_FDS, fds, strict=True):
            os.dup2(fd, target)
        # The server's descriptors (its socket, lock, other sessions' connections) and
        # the handed ones' originals: this process keeps only its stdio.
        os.closerange(len(HANDED_FDS), os.sysconf("SC_OPEN_MAX"))
        _take_on(request)
        _end_with(request["launcher"])
        from rawp_adapters.cli import main

        code = main(request["argv"])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(code)


def _take_on(request: dict[str, Any]) -> None:
    """The launcher's working directory, umask, resource limits, environment, arguments
    and signals."""
    os.chdir(request["cwd"])
    os.umask(request["umask"])
    for limit, (soft, hard) in request["limits"].items():
        try:
            resource.setrlimit(limit, (soft, hard))
        except (OSError, ValueError) as exc:  # above what the server itself may have
            sys.stderr.write(f"rawp-adapters: --warm: resource limit {limit} not set: {exc}\n")
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = ["rawp-adapters", *request["argv"]]
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
        signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.pthread_sigmask(signal.SIG_SETMASK, ())  # held by the server across the fork


def _end_with(launcher: int) -> None:
    """A launcher killed outright (the Master's only handle on this session) ends the
    session as its SIGTERM would."""
    try:
        watched = os.pidfd_open(launcher)
    except ProcessLookupError:
        os.kill(os.getpid(), signal.SIGTERM)
        return

    def wait() -> None:
        select.select([watched], [], [])
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=wait, name="rawp-warm-launcher", daemon=True).start()
