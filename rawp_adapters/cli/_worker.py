"""``rawp-adapters worker``: host sessions for Masters on a NATS server (the ``nats`` extra).

SIGTERM or SIGINT drains it: it takes no new session, closes the running ones (each
gets its closing frames; a running turn may first end by itself within
``--drain-grace``), then exits 0. Secrets come from the environment, never the
command line: ``NATS_TOKEN``, ``NATS_PASSWORD``; no agent gets them (``specs/remote.md``).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path
from urllib.parse import urlsplit

import anyio


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--nats",
        required=True,
        metavar="URL",
        help="the NATS server, or a cluster's servers separated by commas "
        "(nats://a:4222,nats://b:4222)",
    )
    parser.add_argument(
        "--max-sessions",
        type=_positive_int,
        default=16,
        metavar="N",
        help="sessions at once; more wait in the queue (default: 16)",
    )
    parser.add_argument(
        "--adapter-limit",
        action="append",
        default=[],
        metavar="TYPE=N",
        help="at most N sessions of that adapter_type at once (repeatable)",
    )
    parser.add_argument(
        "--workspace-root",
        type=Path,
        metavar="DIR",
        help="session workspaces are relative to DIR (a new DIR/<session_id> when a "
        "request names none); without it a request names an absolute directory",
    )
    parser.add_argument(
        "--prefix", default="rawp", help="subject prefix, e.g. a tenant's (default: rawp)"
    )
    parser.add_argument(
        "--lease-ttl",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="lease time when this worker creates the lease bucket (default: 10)",
    )
    parser.add_argument(
        "--replicas",
        type=_positive_int,
        default=1,
        metavar="N",
        help="servers of a cluster that keep each stream and the lease bucket, when this "
        "worker creates them (default: 1; 3 on a 3-node cluster)",
    )
    parser.add_argument(
        "--drain-grace",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="on SIGTERM, how long a running turn may take to end by itself before its "
        "session is closed (default: 0, close at once)",
    )
    parser.add_argument(
        "--allow-import-path",
        action="store_true",
        help="let request settings name Python code to import (module:attr)",
    )
    parser.add_argument("--user", help="NATS user (the password from NATS_PASSWORD)")
    parser.add_argument("--creds", metavar="FILE", help="NATS credentials file (JWT + nkey)")
    parser.add_argument("--nkey-seed", metavar="FILE", help="NATS nkey seed file")
    parser.add_argument("--tls-ca", metavar="FILE", help="CA bundle to verify the server")
    parser.add_argument("--tls-cert", metavar="FILE", help="client certificate (mutual TLS)")
    parser.add_argument("--tls-key", metavar="FILE", help="client certificate's key")


def worker_command(args: argparse.Namespace) -> int:
    try:
        from rawp_adapters.remote import Credentials, Worker, WorkerSettings
    except ImportError:
        sys.stderr.write("rawp-adapters: worker needs pip install 'rawp-adapters[nats]'\n")
        return 2
    try:
        limits = _limits(args.adapter_limit)
    except ValueError as exc:
        sys.stderr.write(f"rawp-adapters: {exc}\n")
        return 2
    if any(urlsplit(url).password is not None for url in args.nats.split(",")):
        sys.stderr.write(
            "rawp-adapters: the --nats URL holds a password, which every process of this "
            "machine can read in its process list (agents' tools included): give the user "
            "as --user and the password as NATS_PASSWORD\n"
        )
        return 2
    credentials = Credentials(
        token=os.environ.get("NATS_TOKEN"),
        user=args.user,
        password=os.environ.get("NATS_PASSWORD"),
        creds_file=args.creds,
        nkey_seed_file=args.nkey_seed,
        tls_ca=args.tls_ca,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
    )
    worker = Worker(
        WorkerSettings(
            url=args.nats,
            max_sessions=args.max_sessions,
            adapter_limits=limits,
            workspace_root=args.workspace_root,
            prefix=args.prefix,
            credentials=credentials,
            lease_ttl=args.lease_ttl,
            replicas=args.replicas,
            allow_import_paths=args.allow_import_path,
            drain_grace=args.drain_grace,
        )
    )

    # Out once read: no process started here inherits them (an in-process core's CLI
    # takes this environment whole), whichever adapter starts it.
    withheld = worker.agents_environment
    for name in [name for name, value in os.environ.items() if withheld.withholds(name, value)]:
        del os.environ[name]

    async def run() -> None:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async with anyio.create_task_group() as tg:

                async def drain_on_signal() -> None:
                    async for _ in signals:
                        worker.drain()

                tg.start_soon(drain_on_signal)
                await worker.run()
                tg.cancel_scope.cancel()

    anyio.run(run, backend="asyncio")  # nats-py is asyncio's
    return 0


def _limits(pairs: list[str]) -> dict[str, int]:
    limits = {}
    for pair in pairs:
        adapter_type, sep, count = pair.partition("=")
        if not sep or not adapter_type or not count.isdigit() or int(count) < 1:
            raise ValueError(f"--adapter-limit needs TYPE=N with N >= 1, got {pair!r}")
        limits[adapter_type] = int(count)
    return limits


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"a whole number >= 1, not {text!r}")
    return int(text)
