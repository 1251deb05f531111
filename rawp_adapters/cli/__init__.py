"""The ``rawp-adapters`` command: list adapters, print the frame schemas, run one
prompt from the terminal, bridge any adapter over stdio for a Master in any
language, or check an adapter against the conformance kit."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from rawp_adapters._adapter import HOST_TOOL_TIMEOUT_MS, Adapter, AgentMetadata
from rawp_adapters._errors import RawpError
from rawp_adapters._framing import DEFAULT_MAX_LINE_BYTES
from rawp_adapters._registry import create_adapter
from rawp_adapters.cli import _otel

EXIT_USAGE = 2
LOG_LEVELS = ("debug", "info", "warning", "error", "critical")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
    # Each command imports its own code: a Master starts ``serve --stdio`` once per
    # session and pays for every module imported.
    if args.command == "adapters":
        from rawp_adapters.cli._commands import adapters_command

        return adapters_command(as_json=args.json)
    if args.command == "schema":
        return _schema(parser, args)
    if args.command == "check":
        return _run_check(parser, args)
    refused = _otel.start_exporting(args)
    if refused is not None:
        return refused
    if args.command == "worker":
        from rawp_adapters.cli._worker import worker_command

        return worker_command(args)
    if args.command == "inspect":
        from rawp_adapters.inspect._command import inspect_command

        return inspect_command(args)
    workspace = Path(args.workspace).resolve()
    if not workspace.is_dir():
        parser.error(f"--workspace {args.workspace} is not a directory")
    if args.backend == "trio" and not _trio_installed():
        sys.stderr.write(
            "rawp-adapters: --backend trio needs trio: pip install 'rawp-adapters[trio]'\n"
        )
        return EXIT_USAGE
    try:
        adapter = _create_adapter(args)
    except (RawpError, ValueError) as exc:
        sys.stderr.write(f"rawp-adapters: {exc}\n")
        return EXIT_USAGE
    if args.command == "run":
        from rawp_adapters.cli._commands import run_command

        return run_command(
            adapter,
            prompt=args.prompt,
            workspace=workspace,
            jsonl=args.jsonl,
            decisions=args.decisions,
            permission_timeout=args.permission_timeout,
            backend=args.backend,
        )
    if args.listen is not None:
        from rawp_adapters.cli._commands import listen_command

        if args.warm:
            parser.error("--warm goes with --stdio")

        return listen_command(
            partial(_adapter_with, args),
            path=args.listen,
            workspace=workspace,
            max_line_bytes=args.max_line_bytes,
            host_tool_timeout_ms=args.host_tool_timeout_ms,
            backend=args.backend,
        )
    from rawp_adapters.cli._commands import serve_command

    return serve_command(
        adapter,
        workspace=workspace,
        max_line_bytes=args.max_line_bytes,
        host_tool_timeout_ms=args.host_tool_timeout_ms,
        backend=args.backend,
    )


def _schema(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from rawp_adapters._schema import frame_types
    from rawp_adapters.cli._commands import schema_command

    if args.frame_type is not None and args.frame_type not in frame_types():
        parser.error(f"unknown frame type {args.frame_type!r}; known: {', '.join(frame_types())}")
    if args.export is not None and (args.frame_type or args.markdown or args.output):
        parser.error("--export writes every schema; it takes no FRAME_TYPE, --markdown or -o")
    if args.markdown and args.frame_type:
        parser.error("--markdown covers every frame; it takes no FRAME_TYPE")
    return schema_command(
        frame_type=args.frame_type,
        markdown=args.markdown,
        export=args.export,
        output=args.output,
    )


def _run_check(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from rawp_adapters.cli._check import check_command
    from rawp_adapters.testing._catalogue import select_rules
    from rawp_adapters.testing._subject import Prompts

    workspace = None
    if args.workspace is not None:
        workspace = Path(args.workspace).resolve()
        if not workspace.is_dir():
            parser.error(f"--workspace {args.workspace} is not a directory")
    try:
        rules = select_rules(args.rule)
    except ValueError as exc:
        parser.error(str(exc))
    try:
        metadata = _metadata(args)
        create_adapter(metadata)  # fails here, before any rule, on unknown types or settings
    except (RawpError, ValueError) as exc:
        sys.stderr.write(f"rawp-adapters: {exc}\n")
        return EXIT_USAGE
    return check_command(
        metadata,
        prompts=Prompts(
            answer=args.answer_prompt,
            tool=args.tool_prompt,
            busy=args.busy_prompt,
            host_tool=args.host_tool_prompt,
        ),
        rules=rules,
        workspace=workspace,
        timeout=args.timeout,
        permission_timeout_ms=args.permission_timeout_ms,
        backend=args.backend,
        jobs=args.jobs,
    )


def _metadata(args: argparse.Namespace, over: dict[str, Any] | None = None) -> AgentMetadata:
    """The adapter the command line names, with the settings ``over`` laid on its own."""
    from rawp_adapters.cli._commands import parse_settings

    return AgentMetadata(
        adapter_type=args.adapter,
        settings=parse_settings(args.setting, args.settings_json) | (over or {}),
        single_turn_process=args.single_turn_process,
        allow_import_paths=args.allow_import_path,
    )


def _create_adapter(args: argparse.Namespace) -> Adapter:
    return create_adapter(_metadata(args))


def _adapter_with(args: argparse.Namespace, settings: dict[str, Any]) -> Adapter:
    return create_adapter(_metadata(args, settings))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rawp-adapters",
        description="Run coding agents behind one stream of RAWP-DPS frames.",
    )
    parser.add_argument("--version", action=_VersionAction, help="show the version and exit")
    parser.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        default="warning",
        help="log to stderr from this level on (default: warning)",
    )
    common = _CommandParser(add_help=False)
    common.add_argument(
        "--log-level", choices=LOG_LEVELS, default=argparse.SUPPRESS, help=argparse.SUPPRESS
    )
    commands = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=_CommandParser
    )

    listing = commands.add_parser("adapters", parents=[common], help="list the installed adapters")
    listing.add_argument("--json", action="store_true", help="print JSON for machines")

    schema = commands.add_parser(
        "schema",
        parents=[common],
        help="print the JSON Schema of the frames",
        description="Print the JSON Schema of every frame (the union on `type`) or of one "
        "frame type, the field reference as Markdown, or export one file per frame type.",
    )
    schema.add_argument("frame_type", nargs="?", metavar="FRAME_TYPE", help="e.g. agent.text.delta")
    schema.add_argument("--markdown", action="store_true", help="the field reference as Markdown")
    schema.add_argument(
        "--export",
        type=Path,
        metavar="DIR",
        help="write <type>.schema.json for every frame type and frame.schema.json into DIR",
    )
    schema.add_argument("-o", "--output", type=Path, metavar="FILE", help="write to FILE")

    settings = _CommandParser(add_help=False)
    settings.add_argument(
        "--setting",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an adapter setting; VALUE is read as JSON when it parses (repeatable)",
    )
    settings.add_argument(
        "--settings-json", metavar="JSON", help="adapter settings as one JSON object"
    )
    settings.add_argument(
        "--allow-import-path",
        action="store_true",
        help="let settings name Python code to import (module:attr), e.g. an SDK core; "
        "off by default, so settings can only pick installed plugins",
    )
    settings.add_argument(
        "--single-turn-process",
        action="store_true",
        help="start the agent once per prompt (RAWP-DPS §18)",
    )
    settings.add_argument(
        "--backend",
        choices=("asyncio", "trio"),
        default="asyncio",
        help="event loop to run on (default: asyncio; trio needs rawp-adapters[trio])",
    )

    agent = _CommandParser(add_help=False, parents=[settings])
    agent.add_argument(
        "--adapter", default="sdk", metavar="TYPE", help="installed adapter_type (default: sdk)"
    )
    agent.add_argument(
        "--workspace", default=".", metavar="DIR", help="the agent's workspace (default: .)"
    )
    _otel.add_argument(agent)

    run = commands.add_parser(
        "run",
        parents=[common, agent],
        help="run one prompt and show the agent's work",
        description="Run one prompt in a new session and show it as it streams. Exit code: "
        "0 end_turn, 1 error, 130 cancelled (Ctrl-C aborts the turn; a second Ctrl-C "
        "ends the session).",
    )
    run.add_argument("prompt", metavar="PROMPT")
    run.add_argument("--jsonl", action="store_true", help="print the raw DPS frames instead")
    decide = run.add_mutually_exclusive_group()
    decide.add_argument(
        "--yes",
        dest="decisions",
        action="store_const",
        const="allow",
        default="ask",
        help="allow every permission request",
    )
    decide.add_argument(
        "--no",
        dest="decisions",
        action="store_const",
        const="deny",
        help="deny every permission request",
    )
    run.add_argument(
        "--permission-timeout",
        type=_positive_seconds,
        default=30.0,
        metavar="SECONDS",
        help="how long a question waits for an answer before it is denied (default: 30)",
    )

    serve = commands.add_parser(
        "serve",
        parents=[common, agent],
        help="bridge an adapter over stdin/stdout",
        description="Control frames in on stdin, DPS frames out on stdout, one JSON object "
        "per line. Bad input gets session.error INVALID_FRAME. End of stdin ends the "
        "session. Logs go to stderr.",
    )
    _add_check(commands, common, settings)
    where = serve.add_mutually_exclusive_group(required=True)
    where.add_argument("--stdio", action="store_true", help="one session on stdin/stdout")
    where.add_argument(
        "--listen",
        type=Path,
        metavar="PATH",
        help="stay up and serve a session per connection on the Unix socket PATH (mode "
        "0600); each connection opens with a line naming its session, then speaks as "
        "--stdio does; a Master pays the interpreter's start once",
    )
    serve.add_argument(
        "--warm",
        action="store_true",
        help="with --stdio: run the session in a process forked from this installation's "
        "warm server, which has the bridge imported (started by the first --warm start, "
        "it exits after 10 minutes without a session): a bridge per session then starts "
        "in tens of milliseconds; the environment, directory, stdio and signals are "
        "this command's, as without it",
    )
    serve.add_argument(
        "--max-line-bytes",
        type=_positive_int,
        default=DEFAULT_MAX_LINE_BYTES,
        metavar="N",
        help=f"longest control line accepted (default: {DEFAULT_MAX_LINE_BYTES})",
    )
    serve.add_argument(
        "--host-tool-timeout-ms",
        type=_positive_int,
        default=HOST_TOOL_TIMEOUT_MS,
        metavar="N",
        help="how long the Master may take to answer a call of one of its tools before "
        "the agent is told it failed (default: %(default)s)",
    )
    return parser


def _add_check(
    commands: argparse._SubParsersAction[_CommandParser],
    common: _CommandParser,
    settings: _CommandParser,
) -> None:
    commands.add_parser(
        "worker",
        parents=[common],
        help="host sessions for Masters on a NATS server",
        arguments=_worker_arguments,
    )
    commands.add_parser(
        "check",
        parents=[common, settings],
        help="run the conformance kit against an installed adapter",
        description="Put fresh sessions of an installed adapter through the behavioural "
        "contract, rule by rule (MUST, CAPABILITY, ADVISORY). Rules that need a prompt "
        "not given, or a feature the adapter does not claim, are skipped with the reason. "
        "Exit code: 0 no rule failed, 1 a rule failed, 2 usage.",
        arguments=_check_arguments,
    )
    commands.add_parser(
        "inspect",
        parents=[common],
        help="see sessions in the browser: start, attach, record, replay, check",
        description="Serve the inspector page on 127.0.0.1 (the URL printed carries a "
        "fresh token; requests without it are refused), or check a recording with --check.",
        arguments=_inspect_arguments,
    )


def _inspect_arguments(inspect: argparse.ArgumentParser) -> None:
    from rawp_adapters.inspect._command import add_arguments

    add_arguments(inspect)


def _worker_arguments(worker: argparse.ArgumentParser) -> None:
    from rawp_adapters.cli._worker import add_arguments

    add_arguments(worker)
    _otel.add_argument(worker)


def _check_arguments(check: argparse.ArgumentParser) -> None:
    from rawp_adapters.testing._subject import PERMISSION_TIMEOUT_MS, Prompts

    check.add_argument("adapter", metavar="ADAPTER_TYPE", help="installed adapter_type")
    check.add_argument(
        "--answer-prompt",
        default=Prompts().answer,
        metavar="TEXT",
        help=f"a prompt the agent answers in a short turn (default: {Prompts().answer!r})",
    )
    check.add_argument(
        "--tool-prompt", metavar="TEXT", help="a prompt that makes the agent call a gated tool"
    )
    check.add_argument(
        "--busy-prompt", metavar="TEXT", help="a prompt the agent streams for seconds"
    )
    check.add_argument(
        "--host-tool-prompt",
        metavar="TEXT",
        help="a prompt that makes the agent call the kit's host tool kit_echo",
    )
    check.add_argument(
        "--rule", action="append", metavar="ID", help="run only this rule (repeatable)"
    )
    check.add_argument(
        "--workspace", metavar="DIR", help="run in DIR (default: a new temporary one per rule)"
    )
    check.add_argument(
        "--timeout",
        type=_positive_seconds,
        default=60.0,
        metavar="SECONDS",
        help="bound on every wait for the agent, its start included (default: 60)",
    )
    check.add_argument(
        "--permission-timeout-ms",
        type=_positive_int,
        default=PERMISSION_TIMEOUT_MS,
        metavar="MS",
        help="the session's default permission deadline (default: %(default)s)",
    )
    check.add_argument(
        "--jobs",
        type=_positive_int,
        default=1,
        metavar="N",
        help="run up to N rules at once, each in a process of its own; results still "
        "print in order (default: 1)",
    )


class _CommandParser(argparse.ArgumentParser):
    """A command's parser. One given ``arguments`` gets them when that command is parsed
    (or its help asked for), not when every command's parser is built: their defaults
    come from modules that only that command imports (the bridge's start stays short)."""

    def __init__(
        self,
        *args: Any,
        arguments: Callable[[argparse.ArgumentParser], None] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self._arguments = arguments

    def parse_known_args(
        self, args: Iterable[str] | None = None, namespace: Any = None
    ) -> tuple[Any, list[str]]:
        if self._arguments is not None:
            add, self._arguments = self._arguments, None
            add(self)
        return super().parse_known_args(args, namespace)


def _positive_seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not seconds > 0:
        raise argparse.ArgumentTypeError("must be more than 0")
    return seconds


def _positive_int(text: str) -> int:
    try:
        number = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return number


def _trio_installed() -> bool:
    try:
        import trio  # noqa: F401
    except ImportError:
        return False
    return True


class _VersionAction(argparse.Action):
    """``--version``: the installed version is read from the package metadata when
    asked, not at every start (the metadata is searched on ``sys.path``)."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        sys.stdout.write(f"{parser.prog} {_version()}\n")
        parser.exit()


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rawp-adapters")
    except PackageNotFoundError:
        return "unknown"


__all__ = ["build_parser", "main"]
