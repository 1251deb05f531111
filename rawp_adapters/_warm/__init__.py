"""Warm start: ``rawp-adapters serve --stdio --warm`` runs its session in a process
forked from a resident server that has already imported the bridge.

A Master that spawns a bridge per session pays a fresh interpreter and the bridge's
imports (pydantic, anyio, the frame models, the adapter) at every start. With
``--warm``, the command the Master spawns (:mod:`._launch`, standard library only)
hands its stdin, stdout and stderr, its arguments, environment, working directory and
umask to a server (:mod:`._server`) over a Unix socket only its user can reach. The
server forks; the child (:mod:`._child`) takes them on and runs the same
``serve --stdio`` a cold start would, on the Master's own pipes (nothing is relayed).
The launcher forwards SIGTERM, SIGHUP and SIGINT to the child and exits as the child
did (its code, or the same signal); a launcher killed outright ends the child's session
as SIGTERM does.

The first ``--warm`` start of an installation starts the server, and waits for it; the
server exits after ``RAWP_ADAPTERS_WARM_IDLE_S`` seconds (600) with no session. One
whose loaded code changed on disk (an upgrade, an edit) refuses to fork and steps down;
the launcher starts a fresh one.
"""
