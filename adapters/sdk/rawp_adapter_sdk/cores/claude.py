"""The Claude Agent SDK core (``claude-agent-sdk``, installed with the ``claude`` extra).

One ``ClaudeSDKClient`` (one Claude Code CLI process) per session: the workspace is
its cwd, its config and temp dirs live in a per-session directory that is removed on
close, and it never outlives the session: on close the CLI and everything it started
are killed if the SDK's own shutdown leaves them, and a watchdog kills them if the
host process dies first (an orphaned CLI runs its current tool to the end, and one
waiting on a permission answer goes on to call the model again). ``can_use_tool``
goes through the permission bridge; ``cancel`` is the SDK's interrupt. Compaction is
the CLI's ``/compact`` command, plan mode its ``plan`` permission mode.
``claude_agent_sdk`` is imported only when a core starts.

The Master's tools are an in-process MCP server (``mcp__rawp__<name>``, loaded up front,
not deferred behind the CLI's tool search); the CLI's permission gate holds their calls
and the Master is asked through the host call. The model changes with the SDK's
``set_model`` (ids the CLI lists, or ``extra_models``); the thinking level cannot change
live. A ``steer`` message is written to the CLI while the turn runs; the CLI hands it to the
model with the next tool result, in the same turn (no ``follow_up``: the CLI would make
it a turn of its own). The agent's plan is the CLI's task list (``TaskCreate``/``TaskUpdate``/
``TaskList``, turned on with ``CLAUDE_CODE_ENABLE_TODO_TOOLS``; ``TodoWrite`` for CLIs
that still have it).

A CLI that dies while the session is idle is noticed at the next prompt: that turn
fails (``PROCESS_EXIT``, fatal) and the session closes.
"""

from __future__ import annotations

import shutil
import tempfile
from collections import deque
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import psutil
from structlog.stdlib import BoundLogger

from rawp_adapter_sdk._core import (
    Allow,
    Compaction,
    CoreEnvironment,
    CoreError,
    CoreFeatures,
    PermissionCallback,
    PermissionRequest,
)
from rawp_adapter_sdk.events import CoreEvent
from rawp_adapters import ModelState, OperationRejected
from rawp_adapters.frames import AgentErrorCode, Delivery, HostTool, Mode, ModelInfo
from rawp_adapters.plugins import get_logger
from rawp_adapters.processes import ParentDeathGuard, kill_and_wait, snapshot_tree

if TYPE_CHECKING:
    from claude_agent_sdk import ClaudeSDKClient, Message
    from claude_agent_sdk.types import PermissionResult, ToolPermissionContext

    from rawp_adapter_sdk.cores._claude_host_tools import HostToolServer
    from rawp_adapter_sdk.cores._claude_stream import ClaudePlan, ClaudeTurnTranslator

INTERRUPT_TIMEOUT_S = 5.0
"""Bound on the SDK's interrupt request (it would wait 60 s for the CLI's answer)."""
MODE_SWITCH_TIMEOUT_S = 5.0
"""Bound on the SDK's permission-mode request (the same 60 s otherwise)."""
CONTROL_TIMEOUT_S = 10.0
"""Bound on the SDK's model and MCP server requests."""
DRAIN_TIMEOUT_S = 10.0
"""Bound on reading what is left of a turn whose reader was cancelled."""
DISCONNECT_GRACE_S = 2.0
"""How long the CLI gets to exit on its own after stdin closes before it is killed."""
STDERR_TAIL_LINES = 20


class ClaudeCore:
    """Options (all optional): ``model``, ``system_prompt``, ``max_turns``,
    ``allowed_tools`` (run without asking), ``disallowed_tools``, ``env`` (extra
    environment for the CLI, e.g. ``ANTHROPIC_BASE_URL``), ``cli_path`` (another
    Claude Code CLI than the bundled one), ``state_dir`` (where the per-session
    directory is made; the system temp dir by default), ``extra_models`` (model ids
    ``set_model`` takes besides those the CLI lists, e.g. a gateway's own)."""

    def __init__(
        self,
        *,
        model: str | None = None,
        system_prompt: str | None = None,
        max_turns: int | None = None,
        allowed_tools: Sequence[str] = (),
        disallowed_tools: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cli_path: str | None = None,
        state_dir: str | None = None,
        extra_models: Sequence[str] = (),
    ) -> None:
        if max_turns is not None and (not isinstance(max_turns, int) or max_turns < 1):
            raise ValueError(f"max_turns must be a positive integer: {max_turns!r}")
        if env is not None and not all(
            isinstance(k, str) and isinstance(v, str) for k, v in env.items()
        ):
            raise ValueError("env must map strings to strings")
        self.model = model
        self.system_prompt = system_prompt
        self.max_turns = max_turns
        self.allowed_tools = list(allowed_tools)
        self.disallowed_tools = list(disallowed_tools)
        self.env = dict(env or {})
        self.cli_path = cli_path
        self.state_parent = state_dir
        self.extra_models = list(extra_models)
        self.state_path: Path | None = None
        """The per-session directory (CLI config and temp dirs) while the core runs."""
        self._client: ClaudeSDKClient | None = None
        self._guard: ParentDeathGuard | None = None
        self._cli_pid: int | None = None
        self._log: BoundLogger = get_logger("rawp_adapter_sdk.claude")
        self._permission: PermissionCallback | None = None
        self._translator: ClaudeTurnTranslator | None = None
        self._result_pending = False
        self._session_cost: float | None = None
        self._stderr_tail: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        self._version: str | None = None
        self._host_tools: HostToolServer | None = None
        self._gated_host_calls: set[str] = set()
        self._plan: ClaudePlan | None = None
        self._mcp_refused: dict[str, str] = {}
        self._models: dict[str, str] = {}
        """Every name the CLI takes for a model (its aliases, their ids) → the model id."""
        self._model_names: dict[str, str] = {}
        self._current_model: str | None = None

    @property
    def name(self) -> str:
        return "claude-code"

    @property
    def version(self) -> str | None:
        return self._version

    @property
    def features(self) -> CoreFeatures:
        return CoreFeatures(
            thinking=True,
            tool_events=True,
            permission_requests=True,
            abort=True,
            host_tools=True,
            steering=True,
            model_change=True,
            model_list=True,
            plans=True,
        )

    @property
    def model_state(self) -> ModelState:
        return ModelState(model=self._current_model)

    @property
    def cli_pid(self) -> int | None:
        """The Claude Code CLI process, while it runs."""
        return self._cli_pid

    @property
    def guard_pid(self) -> int | None:
        """The watchdog that kills the CLI if this process dies, while it runs."""
        return self._guard.pid if self._guard is not None else None

    @property
    def mcp_refused(self) -> Mapping[str, str]:
        return self._mcp_refused

    # ------------------------------------------------------------ lifecycle

    async def start(self, env: CoreEnvironment) -> None:
        try:
            import claude_agent_sdk as sdk

            from rawp_adapter_sdk.cores._claude_host_tools import HostToolServer
            from rawp_adapter_sdk.cores._claude_mcp import cli_config, refused
            from rawp_adapter_sdk.cores._claude_stream import ClaudePlan
        except ImportError as exc:
            raise CoreError(
                "the claude core needs claude-agent-sdk: install rawp-adapter-sdk[claude]",
                code=AgentErrorCode.SPAWN_FAILED,
                fatal=True,
            ) from exc
        self._log = env.log
        state = Path(tempfile.mkdtemp(prefix="rawp-claude-", dir=self.state_parent))
        self.state_path = state
        (state / "config").mkdir()
        (state / "tmp").mkdir()
        self._plan = ClaudePlan()
        host_tools = HostToolServer(env.call_host_tool, self._host_call_gated)
        self._host_tools = host_tools
        options = sdk.ClaudeAgentOptions(
            cwd=str(env.workspace),
            can_use_tool=self._can_use_tool,
            permission_mode="default",
            include_partial_messages=True,
            setting_sources=[],
            model=self.model,
            system_prompt=self.system_prompt,
            max_turns=self.max_turns,
            allowed_tools=self.allowed_tools,
            disallowed_tools=self.disallowed_tools,
            cli_path=self.cli_path,
            mcp_servers={
                **cli_config(env.mcp_servers),
                host_tools.config["name"]: host_tools.config,
            },
            env={
                "CLAUDE_CONFIG_DIR": str(state / "config"),
                "CLAUDE_CODE_TMPDIR": str(state / "tmp"),
                "TMPDIR": str(state / "tmp"),
                "DISABLE_AUTOUPDATER": "1",
                "ENABLE_TOOL_SEARCH": "false",
                "CLAUDE_CODE_ENABLE_TODO_TOOLS": "1",
                **self.env,
            },
            stderr=self._stderr_tail.append,
        )
        client = sdk.ClaudeSDKClient(options=options)
        self._client = client
        try:
            await client.connect()
            server_info = await client.get_server_info()
            self._version = _cli_version(server_info)
            self._learn_models(server_info)
            if env.mcp_servers:
                self._mcp_refused = await refused(client, [m.name for m in env.mcp_servers])
            self._cli_pid = _cli_pid(client)
            if self._cli_pid is not None:
                self._guard = await ParentDeathGuard.start(self._cli_pid)
            else:
                env.log.warning("cannot see the Claude CLI's pid; it is not guarded")
        except Exception as exc:
            await self.close()
            raise CoreError(
                f"the Claude Code CLI did not start: {exc}{self._stderr_excerpt()}",
                code=AgentErrorCode.SPAWN_FAILED,
                fatal=True,
            ) from exc

    async def close(self) -> None:
        with anyio.CancelScope(shield=True):
            client, self._client = self._client, None
            tree = snapshot_tree(self._cli_pid) if self._cli_pid is not None else []
            if client is not None:
                async with anyio.create_task_group() as tg:
                    # The SDK's own shutdown waits up to 5 s + 5 s before it kills.
                    tg.start_soon(self._kill_after, tree, DISCONNECT_GRACE_S)
                    try:
                        await client.disconnect()
                    except Exception:
                        self._log.exception("disconnecting the Claude CLI failed")
                    tg.cancel_scope.cancel()
            survivors = await kill_and_wait(tree)
            if survivors:
                self._log.error("Claude CLI processes survived SIGKILL", pids=survivors)
            self._cli_pid = None
            if self._guard is not None:
                guard, self._guard = self._guard, None
                await guard.release(self._log)
            if self.state_path is not None:
                state, self.state_path = self.state_path, None
                await anyio.to_thread.run_sync(shutil.rmtree, state, True)

    def _learn_models(self, server_info: Mapping[str, Any] | None) -> None:
        """The CLI's models (``models`` of its ``initialize`` answer) and the one in use."""
        default: str | None = None
        for entry in (server_info or {}).get("models") or []:
            alias, model_id = entry.get("value"), entry.get("resolvedModel")
            if not isinstance(model_id, str) or not model_id:
                continue
            name = entry.get("displayName")
            if alias == "default":
                default = model_id
            elif isinstance(name, str):
                self._model_names.setdefault(model_id, name)
            self._models[model_id] = model_id
            if isinstance(alias, str):
                self._models[alias] = model_id
        for model_id in self.extra_models:
            self._models[model_id] = model_id
        if self.model is not None:
            self._current_model = self._models.get(self.model, self.model)
        else:
            self._current_model = default

    async def _kill_after(self, tree: list[psutil.Process], delay: float) -> None:
        await anyio.sleep(delay)
        self._log.warning("the Claude CLI did not exit after stdin closed; killing it")
        await kill_and_wait(tree)

    # ------------------------------------------------------------ turns

    async def run(self, prompt: str, permission: PermissionCallback) -> AsyncIterator[CoreEvent]:
        from rawp_adapter_sdk.cores._claude_stream import ClaudeTurnTranslator

        client = await self._send(prompt)
        assert self._plan is not None
        translator = ClaudeTurnTranslator(self._session_cost, self._plan)
        self._translator = translator
        self._permission = permission
        try:
            async for message in self._replies(client):
                for event in translator.feed(message):
                    yield event
                if translator.error is not None:
                    raise translator.error
        finally:
            self._permission = None
            self._translator = None
        if not translator.finished:
            raise CoreError("the Claude Code CLI ended the turn without a result", fatal=True)

    async def cancel(self) -> None:
        client, translator = self._client, self._translator
        if client is None or translator is None or translator.finished:
            return
        translator.cancel_requested = True
        with anyio.move_on_after(INTERRUPT_TIMEOUT_S):
            await client.interrupt()

    async def compact(self, instructions: str | None) -> Compaction:
        from rawp_adapter_sdk.cores._claude_stream import ClaudeCompaction

        command = f"/compact {instructions}" if instructions else "/compact"
        client = await self._send(command)
        compaction = ClaudeCompaction()
        async for message in self._replies(client):
            compaction.feed(message)
        return compaction.outcome()

    async def switch_mode(self, mode: Mode) -> None:
        """The CLI's permission mode: ``plan`` tells the model to plan and change nothing
        (tool calls still come to the permission bridge), ``default`` lifts that."""
        client = self._running_client()
        with self._cli_failures():
            try:
                with anyio.fail_after(MODE_SWITCH_TIMEOUT_S):
                    await client.set_permission_mode(mode)
            except TimeoutError:
                raise CoreError(
                    f"the Claude Code CLI did not confirm {mode} mode "
                    f"within {MODE_SWITCH_TIMEOUT_S:g} s"
                ) from None

    async def steer(self, text: str, delivery: Delivery) -> None:
        """Only ``steer`` (the features say so). A message that comes as the CLI ends the
        turn is refused: written then, the CLI would start a turn of its own with it
        (the window is the time between the CLI's result and this core reading it)."""
        del delivery
        client, translator = self._running_client(), self._translator
        if translator is None or translator.finished:
            raise CoreError("the turn was ending; the message was not passed on")
        with self._cli_failures():
            await client.query(text)

    async def publish_tools(self, tools: Sequence[HostTool]) -> None:
        """The CLI lists an MCP server's tools once, and reconnecting is refused for SDK
        servers: turning the server off and on again has it list the new catalog."""
        from rawp_adapter_sdk.cores._claude_host_tools import SERVER_NAME

        client = self._running_client()
        assert self._host_tools is not None
        self._host_tools.publish(tools)
        with self._cli_failures():
            try:
                with anyio.fail_after(CONTROL_TIMEOUT_S):
                    await client.toggle_mcp_server(SERVER_NAME, enabled=False)
                    await client.toggle_mcp_server(SERVER_NAME, enabled=True)
            except TimeoutError:
                raise CoreError(
                    "the Claude Code CLI did not take the host tools "
                    f"within {CONTROL_TIMEOUT_S:g} s"
                ) from None

    async def set_model(self, model: str | None, thinking_level: str | None) -> ModelState:
        """The CLI takes any model name and fails only when the API refuses it at the next
        prompt; a model it does not list (and not in ``extra_models``) is rejected here
        instead. ``None`` goes back to the CLI's default."""
        del thinking_level  # never asked: thinking_change is off
        client = self._running_client()
        if model is not None and model not in self._models:
            known = ", ".join(sorted(set(self._models.values()))) or "none"
            raise OperationRejected(
                f"{model!r} is not a model this Claude Code CLI knows (known: {known})"
            )
        with self._cli_failures():
            try:
                with anyio.fail_after(CONTROL_TIMEOUT_S):
                    await client.set_model(model)
            except TimeoutError:
                raise CoreError(
                    f"the Claude Code CLI did not confirm the model within {CONTROL_TIMEOUT_S:g} s"
                ) from None
        self.model = model
        self._current_model = self._models.get(model or "default", model)
        return self.model_state

    async def list_models(self) -> list[ModelInfo]:
        ids = dict.fromkeys(self._models.values())
        return [
            ModelInfo(id=model_id, name=self._model_names.get(model_id), provider="anthropic")
            for model_id in ids
        ]

    # ------------------------------------------------------------ talking to the CLI

    def _running_client(self) -> ClaudeSDKClient:
        if self._client is None:
            raise CoreError("the Claude core is not running", fatal=True)
        return self._client

    async def _send(self, text: str) -> ClaudeSDKClient:
        """Send ``text`` as the next user message once the CLI is done with the last one;
        read its answer with :meth:`_replies`."""
        client = self._running_client()
        with self._cli_failures():
            if self._result_pending:
                await self._finish_previous_turn(client)
            self._result_pending = True
            await client.query(text)
        return client

    async def _replies(self, client: ClaudeSDKClient) -> AsyncIterator[Message]:
        """The CLI's messages up to and including the result of the last user message."""
        from claude_agent_sdk import ResultMessage

        with self._cli_failures():
            async for message in client.receive_response():
                if isinstance(message, ResultMessage):
                    self._result_pending = False
                    if message.total_cost_usd is not None:
                        self._session_cost = message.total_cost_usd
                yield message

    async def _finish_previous_turn(self, client: ClaudeSDKClient) -> None:
        """A turn whose reader was cancelled left its tail (up to its result) unread."""
        with anyio.move_on_after(DRAIN_TIMEOUT_S):
            with anyio.move_on_after(INTERRUPT_TIMEOUT_S):
                await client.interrupt()
            async for _ in self._replies(client):
                pass
        if self._result_pending:
            raise CoreError("the previous turn of the Claude Code CLI did not finish", fatal=True)

    @contextmanager
    def _cli_failures(self) -> Iterator[None]:
        """The SDK's errors (the CLI died or broke the protocol) as a fatal CoreError."""
        from claude_agent_sdk import ClaudeSDKError

        try:
            yield
        except ClaudeSDKError as exc:
            raise CoreError(
                f"the Claude Code CLI failed: {exc}{self._stderr_excerpt()}",
                code=AgentErrorCode.PROCESS_EXIT,
                fatal=True,
            ) from exc

    async def _can_use_tool(
        self, tool_name: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResult:
        from claude_agent_sdk import PermissionResultAllow, PermissionResultDeny

        from rawp_adapter_sdk.cores._claude_host_tools import host_tool_name

        permission = self._permission
        if permission is None:
            return PermissionResultDeny(message="No turn is running.", interrupt=True)
        if host_tool_name(tool_name) is not None and context.tool_use_id:
            # The host call asks the Master (after checking the input) instead.
            self._gated_host_calls.add(context.tool_use_id)
            return PermissionResultAllow()
        decision = await permission(
            PermissionRequest(
                tool_name=tool_name,
                tool_input=tool_input,
                tool_call_id=context.tool_use_id,
                title=context.title,
                description=context.description,
            )
        )
        if isinstance(decision, Allow):
            edited = decision.updated_input
            return PermissionResultAllow(updated_input=dict(edited) if edited is not None else None)
        return PermissionResultDeny(message=decision.message, interrupt=decision.stops_turn)

    def _host_call_gated(self, tool_use_id: str) -> bool:
        """Whether the CLI's permission gate held the host call (and so the Master is
        asked); not when the tool is in ``allowed_tools``."""
        if tool_use_id in self._gated_host_calls:
            self._gated_host_calls.discard(tool_use_id)
            return True
        return False

    # ------------------------------------------------------------ helpers

    def _stderr_excerpt(self) -> str:
        if not self._stderr_tail:
            return ""
        return "; stderr: " + " | ".join(self._stderr_tail)


def _cli_pid(client: object) -> int | None:
    """The CLI's pid, from the SDK's private transport (checked against 0.2.186)."""
    transport = getattr(client, "_transport", None)
    process = getattr(transport, "_process", None)
    pid = getattr(process, "pid", None)
    return pid if isinstance(pid, int) else None


def _cli_version(server_info: Mapping[str, Any] | None) -> str | None:
    """The version the running CLI reports in its answer to the SDK's ``initialize``
    (the bundled CLI's version would be wrong for another ``cli_path``)."""
    version = (server_info or {}).get("claude_code_version")
    return version if isinstance(version, str) and version else None
