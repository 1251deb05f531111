"""Running an agent as an OS process, and making sure it, and everything it started,
dies with its session. For adapters that run agents as processes (ours and third-party
ones):

- :class:`AgentProcess`: one agent, spawned confined, with its pipes, a bounded stderr
  tail, its end as an :class:`ExitStatus` (:func:`exit_status`, mapped to
  ``agent.error``) and :meth:`~AgentProcess.terminate`: stdin closed, grace, SIGTERM,
  grace, SIGKILL, leftovers killed, confirmed gone.
- :class:`AgentProcessSettings`: the settings such an adapter shares (``env_policy``,
  ``env_allowlist``, ``env``, ``sigterm_grace``, ``stderr_tail_bytes``);
  :func:`agent_environment` builds the agent's environment from them, ``RAWP_*`` last.
- :class:`HostEnvironment`, :func:`host_environment`: what a host lets its agents take
  from its own environment (a worker: ``allowlist`` unless a setting says otherwise, and
  never its credentials).
- :func:`open_confined_process`: start the agent so that nothing it starts can leave
  its reach, with the strongest mechanism this host allows (its :class:`Confinement`
  says which; log it, report it):

  - ``cgroup``: a cgroup v2 of its own (Linux, a writable unified hierarchy). Every
    process the agent starts stays in it, however it detaches (double fork, ``setsid``,
    an empty environment); the kernel kills them all at once (``cgroup.kill``) and
    attribution is exact however many sessions a host runs. Ending costs in proportion
    to the session's own processes: no scan of the host's.
  - ``subreaper``: the agent is made a child subreaper (``PR_SET_CHILD_SUBREAPER``)
    before it runs, so the orphans of its tools are re-parented to the agent, not to
    init, and stay in its process tree (:func:`snapshot_tree`) while the agent lives.
  - ``tree-snapshot``: the agent's tree recorded while it runs, and the processes
    carrying the session's marker (:func:`marked_processes`); a tool that detaches
    between two records and clears its environment escapes this one.

  ``RAWP_CONTAINMENT`` (``cgroup``, ``subreaper`` or ``tree-snapshot``) caps the
  mechanism, e.g. where another manager owns the cgroups.
- :func:`snapshot_tree`: a process and its descendants, taken while it is alive
  (the children of a dead process are re-parented and cannot be found any more).
- :func:`running`: alive and not a zombie.
- :func:`kill_and_wait`: SIGKILL a snapshot and wait, bounded, until it is gone.
- :func:`marked_processes`: the processes whose environment carries a marker such
  as ``RAWP_SESSION_ID=<id>``; this finds tool processes an agent started in
  sessions of their own that were re-parented to init when their parent exited.
- :class:`ParentDeathGuard`: kills a process's cgroup, or its tree and every process
  carrying the marker, if the host dies without closing the session (SIGKILL, crash).
  Every guard of a host process is a registration with one shared supervisor, a small
  Python process started with the first guard and let go with the last: it blocks
  reading a socket only the host holds, and end-of-file with registrations left means
  the host is gone. A session adds one line to that socket when it starts and one when
  it closes, no process or thread of its own. The line that registers an agent passes
  the supervisor copies of the host's ends of the agent's pipes, which it holds until
  the session closes them: an agent never sees its stdin end (nor its stdout break)
  before the supervisor has stopped it, so a subreaper cannot hand its orphans to init.
  ``prctl(PR_SET_PDEATHSIG)`` would be lighter but fires when the spawning *thread*
  exits, and trio spawns from worker threads that exit when idle; SDKs that spawn the
  agent themselves also have no pre-exec hook to set it.
"""

from rawp_adapters._errors import GuardError
from rawp_adapters._frames import Containment
from rawp_adapters.processes._agent import AgentProcess, AgentWriteError
from rawp_adapters.processes._cgroup import SessionCgroup
from rawp_adapters.processes._confine import (
    CONTAINMENT_VAR,
    CONTAINMENTS,
    Confinement,
    open_confined_process,
)
from rawp_adapters.processes._exit import ExitStatus, exit_status
from rawp_adapters.processes._launch import (
    DEFAULT_ENV_ALLOWLIST,
    SESSION_ID_VAR,
    AgentProcessSettings,
    HostEnvironment,
    agent_environment,
    check_workspace,
    host_environment,
)
from rawp_adapters.processes._supervisor import ARM_TIMEOUT_S, ParentDeathGuard, host_supervisor
from rawp_adapters.processes._tree import (
    CREATED_SLACK_S,
    KILL_WAIT_S,
    Marker,
    kill_and_wait,
    marked_processes,
    running,
    snapshot_tree,
)

__all__ = [
    "ARM_TIMEOUT_S",
    "CONTAINMENTS",
    "CONTAINMENT_VAR",
    "CREATED_SLACK_S",
    "DEFAULT_ENV_ALLOWLIST",
    "KILL_WAIT_S",
    "SESSION_ID_VAR",
    "AgentProcess",
    "AgentProcessSettings",
    "AgentWriteError",
    "Confinement",
    "Containment",
    "ExitStatus",
    "GuardError",
    "HostEnvironment",
    "Marker",
    "ParentDeathGuard",
    "SessionCgroup",
    "agent_environment",
    "check_workspace",
    "exit_status",
    "host_environment",
    "host_supervisor",
    "kill_and_wait",
    "marked_processes",
    "open_confined_process",
    "running",
    "snapshot_tree",
]
