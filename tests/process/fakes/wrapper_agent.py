"""A hostile wrapper around an agent, as npx or uvx wrappers are: a real process for the
process adapter's containment tests.

    python wrapper_agent.py TOKEN LOG AGENT_ARGV...

It appends its arguments after LOG (a JSON list) to LOG, one line per run, ignores
SIGTERM, starts a grandchild in a session of its own, double-forks an orphan that keeps
the environment (the session's marker included), then runs AGENT_ARGV (plus whatever
arguments follow, such as ``--version``) as its child on the same stdin and stdout and
exits with its status. The grandchild and the orphan sleep for a minute with
``TOKEN <role>`` in their command lines (role ``version`` when the wrapper was run with
``--version``, else ``agent``), by which tests find them.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

SLEEPER = "import sys, time; time.sleep(60)"


def sleeper(token: str, role: str) -> list[str]:
    return [sys.executable, "-I", "-S", "-c", SLEEPER, token, role]


def double_fork_orphan(argv: list[str]) -> None:
    """Start ``argv`` as an orphan: its parent exits at once (it keeps our environment)."""
    if (middle := os.fork()) == 0:
        if os.fork() == 0:
            os.execv(argv[0], argv)
        os._exit(0)
    os.waitpid(middle, 0)


def main() -> int:
    token, log, *agent = sys.argv[1:]
    with open(log, "a", encoding="utf-8") as runs:
        runs.write(json.dumps(agent) + "\n")
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    role = "version" if "--version" in agent else "agent"
    subprocess.Popen(sleeper(token, role), stdin=subprocess.DEVNULL, start_new_session=True)
    double_fork_orphan(sleeper(token, role))
    return subprocess.call(agent)


if __name__ == "__main__":
    sys.exit(main())
