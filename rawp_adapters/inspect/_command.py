"""``rawp-adapters inspect``: serve the inspector on 127.0.0.1 behind a fresh token, or
``--check FILE``: check a recording and exit 1 naming each rule it breaks."""

from __future__ import annotations

import argparse
import secrets
import socket
import sys
from pathlib import Path

from rawp_adapters.inspect._recordings import check_recording, recording_lines

EXIT_BROKEN = 1
EXIT_USAGE = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default: 127.0.0.1, this machine only)",
    )
    parser.add_argument(
        "--port", type=int, default=0, help="port to listen on (default: 0, any free one)"
    )
    parser.add_argument(
        "--open",
        dest="recordings",
        action="append",
        default=[],
        type=Path,
        metavar="FILE",
        help="open a recorded JSONL file in the page (repeatable)",
    )
    parser.add_argument(
        "--record",
        type=Path,
        metavar="DIR",
        help="write each session's frames (both directions) to DIR/<feed>-<title>.jsonl "
        "as they come",
    )
    parser.add_argument(
        "--check",
        type=Path,
        metavar="FILE",
        help="check a recording against the DPS rules and exit: 0 when it keeps them, "
        "1 naming each rule broken (for CI), 2 when it cannot be read",
    )


def inspect_command(args: argparse.Namespace) -> int:
    if args.check is not None:
        return check_file(args.check)
    recordings = []
    for path in args.recordings:
        try:
            recordings.append((path.name, path.read_text(encoding="utf-8", errors="replace")))
        except OSError as exc:
            sys.stderr.write(f"rawp-adapters: cannot read {path}: {exc.strerror or exc}\n")
            return EXIT_USAGE
    try:
        from rawp_adapters.inspect._serve import serve
    except ImportError as exc:
        sys.stderr.write(
            f"rawp-adapters: inspect needs {exc.name}: pip install 'rawp-adapters[inspect]'\n"
        )
        return EXIT_USAGE
    if args.record is not None and not args.record.is_dir():
        sys.stderr.write(f"rawp-adapters: --record {args.record} is not a directory\n")
        return EXIT_USAGE
    try:
        family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
        listener = socket.create_server((args.host, args.port), family=family)
    except OSError as exc:
        sys.stderr.write(f"rawp-adapters: cannot listen on {args.host}:{args.port}: {exc}\n")
        return EXIT_USAGE
    token = secrets.token_urlsafe(24)
    return serve(listener, token, recordings, args.record)


def check_file(path: Path) -> int:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        sys.stderr.write(f"rawp-adapters: cannot read {path}: {exc.strerror or exc}\n")
        return EXIT_USAGE
    lines = recording_lines(text)
    broken = check_recording(lines)
    for line, violation in broken:
        sys.stdout.write(f"{path}:{line}: [{violation.rule}] {violation.detail}\n")
    if broken:
        rules = sorted({violation.rule for _, violation in broken})
        sys.stdout.write(f"{path}: breaks {', '.join(rules)}\n")
        return EXIT_BROKEN
    sys.stdout.write(f"{path}: {len(lines)} frames, every rule kept\n")
    return 0
