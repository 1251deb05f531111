"""The conformance kit: the behavioural contract, rule by rule, against any adapter.

The author describes the adapter once, as a :class:`ConformanceSubject`: how to build
it and which :class:`Prompts` make its agent answer, call a permission-gated tool and
stay busy. :func:`check_adapter` runs every rule in a fresh session of its own and
returns a :class:`ConformanceReport`; the pytest plugin
(:mod:`rawp_adapters.testing.pytest_plugin`) and ``rawp-adapters check`` are two ways
to run it. Tiers:

- ``MUST``: what every adapter keeps; a failure fails the run.
- ``CAPABILITY``: what an adapter keeps for the features it claims in
  ``session.capabilities``; skipped (with the reason) for features it does not claim.
- ``ADVISORY``: timings; reported, never failing.

Every session a rule opens is also checked against the invariants
(:func:`check_frames`), against the features it claims (no frames of a feature it
denies) and for processes left behind.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, NoReturn

import anyio
import psutil

from rawp_adapters._adapter import Adapter
from rawp_adapters._frames import (
    AgentErrorFrame,
    ClientFrame,
    Envelope,
    Features,
    InteractionRequest,
    InteractionRequestFrame,
    InteractionResolvedFrame,
    ModelChangedFrame,
    ModelListFrame,
    SessionCapabilitiesFrame,
    SessionClosedFrame,
    SessionCompactedFrame,
    SessionErrorFrame,
    ToolCatalogUpdatedFrame,
    ToolInvokeRequestFrame,
    ToolInvokeResultFrame,
    TurnEndFrame,
    TurnStartFrame,
)
from rawp_adapters._protocol import FORGED_FRAME
from rawp_adapters._session import SessionOptions
from rawp_adapters.host import Policy, allow_all, deny_all, never_answer
from rawp_adapters.processes import host_supervisor, marked_processes, running
from rawp_adapters.testing._driver import SessionDriver, drive
from rawp_adapters.testing._invariants import check_frames

Tier = Literal["MUST", "CAPABILITY", "ADVISORY"]
Status = Literal["passed", "failed", "skipped", "advised"]

ABORT_ADVISED_S = 0.2
"""An abort should end its turn within this."""
CLOSE_ADVISED_S = 1.0
"""An explicit end should give ``session.closed`` within this."""
PERMISSION_TIMEOUT_MS = 1000
"""The sessions' default permission deadline unless the subject names another."""
_CONTEXT_FRAMES = 4
"""Frames shown either side of the one a failure points at."""


@dataclass(frozen=True, slots=True)
class Prompts:
    """Prompts that make the subject's agent do what the rules need.

    ``answer``: a short turn that ends by itself. ``tool``: a turn that calls one
    permission-gated tool (the permission rules are skipped without it). ``busy``: a
    turn that streams for long enough to be aborted (several seconds; the abort and
    one-prompt rules are skipped without it). ``host_tool``: a turn that calls the
    Master's tool :data:`KIT_HOST_TOOL` with ``{"message": <any text>}`` (the host tool
    call rule is skipped without it).
    """

    answer: str = "Say hello."
    tool: str | None = None
    busy: str | None = None
    host_tool: str | None = None


@dataclass(frozen=True, slots=True)
class ConformanceSubject:
    """An adapter under test. ``make_adapter`` builds a fresh adapter for each session.

    - ``workspace``: the directory sessions run in; ``None`` gives each rule a fresh
      temporary directory.
    - ``adapter_type``: the type a Master asks for to reach it (``rawp-adapters check``
      sets it); its capabilities must state it. ``None``: the class's own.
    - ``permission_timeout_ms``: the session's default interaction deadline (an
      adapter that sets its own keeps it: configure it short in ``make_adapter``).
    - ``timeout``: bound on every wait for the agent, in seconds.
    """

    make_adapter: Callable[[], Adapter]
    workspace: str | Path | None = None
    prompts: Prompts = field(default_factory=Prompts)
    adapter_type: str | None = None
    permission_timeout_ms: int = PERMISSION_TIMEOUT_MS
    timeout: float = 60.0


class RuleSkipped(Exception):
    """The rule does not apply to this subject (the reason is the message)."""


class RuleFailed(AssertionError):
    """The subject broke the rule: what is wrong, and the frames around it."""


class RuleAdvice(Exception):
    """An advisory rule's limit was exceeded (the measurement is the message)."""


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule of the contract: ``id`` names it in reports, ``summary`` says what it
    requires."""

    id: str
    tier: Tier
    summary: str
    check: Callable[[Probe], Awaitable[str | None]] = field(repr=False)


@dataclass(frozen=True, slots=True)
class RuleResult:
    rule: Rule
    status: Status
    detail: str
    """The failure (with frames), the skip reason, the advice or a note on a pass."""
    seconds: float

    def __str__(self) -> str:
        label = {"passed": "PASS", "failed": "FAIL", "skipped": "SKIP", "advised": "NOTE"}
        head = f"{label[self.status]}  {self.rule.tier:<10}  {self.rule.id}"
        if not self.detail:
            return head
        first, *rest = self.detail.splitlines()
        return "\n".join([f"{head}: {first}", *("      " + line for line in rest)])


@dataclass(frozen=True, slots=True)
class ConformanceReport:
    results: list[RuleResult]

    @property
    def failed(self) -> list[RuleResult]:
        return [r for r in self.results if r.status == "failed"]

    @property
    def ok(self) -> bool:
        """No rule failed (skips and advice do not count)."""
        return not self.failed

    def format(self) -> str:
        counts = {
            status: sum(r.status == status for r in self.results)
            for status in ("passed", "failed", "skipped", "advised")
        }
        summary = ", ".join(f"{n} {status}" for status, n in counts.items() if n)
        return "\n".join([*map(str, self.results), summary]) + "\n"


# ------------------------------------------------------------------ running rules


class Probe:
    """What a rule works with: fresh checked sessions of the subject."""

    def __init__(self, subject: ConformanceSubject, workspace: Path) -> None:
        self.subject = subject
        self.prompts = subject.prompts
        self.workspace = workspace
        self.driver: SessionDriver | None = None
        """The session open now (its frames are shown when the rule fails)."""
        self._ended: list[tuple[SessionDriver, set[int], float]] = []

    @asynccontextmanager
    async def session(self, policy: Policy = allow_all) -> AsyncIterator[SessionDriver]:
        """A session of a new adapter, ended on exit. Its capabilities are checked at
        once; its stream (invariants, claimed features) and the processes it left are
        checked by :meth:`verify` once the rule's own checks have passed."""
        adapter = self.subject.make_adapter()
        options = SessionOptions(interaction_timeout_ms=self.subject.permission_timeout_ms)
        before = await anyio.to_thread.run_sync(_descendants)
        started = time.time()
        async with drive(
            adapter,
            workspace=self.workspace,
            policy=policy,
            timeout=self.subject.timeout,
            options=options,
            check=False,
        ) as d:
            self.driver = d
            caps = await d.wait_for(SessionCapabilitiesFrame)
            self._check_capabilities(caps, adapter)
            self._ended.append((d, before, started))
            yield d
            await d.end()

    async def verify(self) -> None:
        """Check every session's stream, claimed features and leftover processes."""
        for d, before, started in self._ended:
            self.driver = d
            _check_stream(d)
            _check_runtime_owned(d)
            _check_features(d, _features(d))
            await _check_processes(d, before, started)

    def _check_capabilities(self, caps: SessionCapabilitiesFrame, adapter: Adapter) -> None:
        d = self.driver
        assert d is not None
        if d.frames[0] is not caps:
            fail("capabilities-first", f"the first frame is {d.frames[0].type}", d, 0)
        expected = self.subject.adapter_type or type(adapter).adapter_type
        stated = (caps.payload.adapter_type, caps.payload.features.adapter_type)
        if stated != (expected, expected):
            fail(
                "capabilities-first",
                f"session.capabilities states adapter_type {stated[0]!r} and "
                f"features.adapter_type {stated[1]!r}; a Master reaches this adapter as "
                f"{expected!r}",
                d,
                0,
            )


async def _check_processes(d: SessionDriver, before: set[int], started: float) -> None:
    marker = ("RAWP_SESSION_ID", d.session.session_id)
    marked = await anyio.to_thread.run_sync(
        lambda: marked_processes(marker, created_after=started - 1.0)
    )
    new = (await anyio.to_thread.run_sync(_descendants)) - before - {host_supervisor().pid}
    left = sorted({p.pid for p in marked} | new)
    if left:
        fail(
            "no-process-left",
            f"after session.closed these processes of the session still run: {_describe(left)}",
            d,
            len(d.frames) - 1,
        )


def _descendants() -> set[int]:
    """This process's running descendants (zombies excluded)."""
    found = set()
    for child in psutil.Process().children(recursive=True):
        if running(child):
            found.add(child.pid)
    return found


def _describe(pids: Iterable[int]) -> str:
    parts = []
    for pid in pids:
        try:
            parts.append(f"{pid} ({' '.join(psutil.Process(pid).cmdline())[:80]})")
        except psutil.Error:
            parts.append(str(pid))
    return ", ".join(parts)


def _check_stream(d: SessionDriver) -> None:
    violations = check_frames(d.transcript)
    if violations:
        first = violations[0]
        fail(
            f"invariants/{first.rule}",
            "the stream breaks the DPS rules:\n" + "\n".join(map(str, violations)),
            d,
            first.index,
        )


def _check_runtime_owned(d: SessionDriver) -> None:
    """The runtime drops a frame only it may emit and says so; the adapter is at fault."""
    forged = FORGED_FRAME.split("{frame_type}")
    for index, frame in enumerate(d.frames):
        if isinstance(frame, AgentErrorFrame) and frame.payload.message.startswith(forged[0]):
            fail(
                "runtime-owned-frames",
                f"{frame.payload.message}: turns, questions, state, session errors and "
                "session.closed are the session runtime's to say, never the adapter's",
                d,
                index,
            )


def _check_features(d: SessionDriver, features: Features) -> None:
    claimed = {
        "thinking": ("agent.thinking.",),
        "tool_events": ("tool.invoke.",),
        "permission_requests": ("agent.interaction.request",),
    }
    # Host tool calls are the runtime's frames, there with host_tools alone.
    host_calls = {
        frame.payload.invocation_id
        for frame in d.of_type(ToolInvokeRequestFrame)
        if features.host_tools and frame.payload.tool_name in _published(d)
    }
    for feature, prefixes in claimed.items():
        if getattr(features, feature):
            continue
        for index, frame in enumerate(d.frames):
            if frame.type.startswith(prefixes) and (
                feature != "permission_requests"
                or getattr(frame.payload, "interaction_type", None) == "PERMISSION"
            ):
                if getattr(frame.payload, "invocation_id", None) in host_calls:
                    continue
                fail(
                    "honest-features",
                    f"{frame.type} from an adapter whose capabilities say {feature}: false",
                    d,
                    index,
                )


def _published(d: SessionDriver) -> set[str]:
    return {name for frame in d.of_type(ToolCatalogUpdatedFrame) for name in frame.payload.tools}


async def run_rule(subject: ConformanceSubject, rule: Rule) -> RuleResult:
    """Run one rule in sessions of its own; never raises for the subject's faults."""
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="rawp-conformance-") as scratch:
        workspace = Path(scratch) if subject.workspace is None else Path(subject.workspace)
        workspace = Path(await anyio.Path(workspace).resolve())
        probe = Probe(subject, workspace)
        try:
            note = await rule.check(probe)
            await probe.verify()
        except Exception as exc:
            status, detail = _outcome(_leaf(exc), rule, subject, probe)
            return RuleResult(rule, status, detail, time.monotonic() - began)
    return RuleResult(rule, "passed", note or "", time.monotonic() - began)


def _leaf(exc: Exception) -> Exception:
    """The exception itself, or the first one a task group wrapped it in."""
    while isinstance(exc, ExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _outcome(
    exc: Exception, rule: Rule, subject: ConformanceSubject, probe: Probe
) -> tuple[Status, str]:
    if isinstance(exc, RuleSkipped):
        return "skipped", str(exc)
    if isinstance(exc, RuleAdvice):
        return "advised", str(exc)
    if isinstance(exc, RuleFailed):
        return "failed", str(exc)
    if isinstance(exc, TimeoutError):
        message = f"[{rule.id}] timed out after {subject.timeout:g} s: {exc or 'no answer'}"
        return "failed", _with_frames(message, probe.driver, None)
    raise exc


async def check_adapter(
    subject: ConformanceSubject, *, rules: Iterable[str] | None = None
) -> ConformanceReport:
    """Run every rule (or those named in ``rules``) against ``subject``, in order."""
    chosen = select_rules(rules)
    return ConformanceReport([await run_rule(subject, rule) for rule in chosen])


def select_rules(ids: Iterable[str] | None = None) -> list[Rule]:
    """The rules with those ids (all of them for ``None``); raises ``ValueError`` for an
    unknown id."""
    if ids is None:
        return list(RULES)
    by_id = {rule.id: rule for rule in RULES}
    unknown = [i for i in ids if i not in by_id]
    if unknown:
        raise ValueError(f"unknown rule(s) {', '.join(unknown)}; known: {', '.join(by_id)}")
    return [by_id[i] for i in ids]


# ------------------------------------------------------------------ failures


def fail(rule: str, message: str, d: SessionDriver | None, at: int | None) -> NoReturn:
    """Raise :class:`RuleFailed` for ``rule`` with the frames around ``at``."""
    raise RuleFailed(_with_frames(f"[{rule}] {message}", d, at))


def _with_frames(message: str, d: SessionDriver | None, at: int | None) -> str:
    if d is None or not d.frames:
        return message
    frames = d.frames
    at = len(frames) - 1 if at is None else max(0, min(at, len(frames) - 1))
    lo, hi = max(0, at - _CONTEXT_FRAMES), min(len(frames), at + _CONTEXT_FRAMES + 1)
    lines = [message, f"frames {lo}..{hi - 1} of {len(frames)}:"]
    lines += [f"{'>' if i == at else ' '} {i:>4} {_frame_line(frames[i])}" for i in range(lo, hi)]
    return "\n".join(lines)


def _frame_line(frame: Envelope) -> str:
    payload = getattr(frame, "payload", None)
    shown = payload.model_dump(mode="json", exclude_none=True) if payload is not None else {}
    text = json.dumps(shown, ensure_ascii=False)
    return f"{frame.type} {text if len(text) <= 160 else text[:157] + '...'}"


def _index(d: SessionDriver, frame: Envelope) -> int:
    return next(i for i, f in enumerate(d.frames) if f is frame)


def _needs(value: str | None, reason: str) -> str:
    if value is None:
        raise RuleSkipped(reason)
    return value


def _claims(features: Features, feature: str) -> None:
    if not getattr(features, feature):
        raise RuleSkipped(f"the adapter does not claim {feature}")


def _features(d: SessionDriver) -> Features:
    return d.of_type(SessionCapabilitiesFrame)[0].payload.features


KIT_HOST_TOOL: Final[dict[str, Any]] = {
    "name": "kit_echo",
    "description": "Echo a message back (published by the conformance kit).",
    "input_schema": {
        "type": "object",
        "properties": {"message": {"type": "string"}},
        "required": ["message"],
    },
}
"""The host tool the kit publishes for ``Prompts.host_tool``."""
_NO_BUSY = "needs Prompts.busy: a prompt its agent streams for a while"
_NO_HOST_TOOL = "needs Prompts.host_tool: a prompt that makes its agent call kit_echo"
_CATALOG_ANSWERS: Final = frozenset({"tool.catalog.updated", "session.error"})
_MODEL_ANSWERS: Final = frozenset({"session.model.changed", "session.error"})
_NO_TOOL = "needs Prompts.tool: a prompt that makes its agent call a permission-gated tool"


# ------------------------------------------------------------------ MUST


async def _capabilities_first(p: Probe) -> str:
    async with p.session() as d:
        features = _features(d)
    return f"adapter_type {features.adapter_type}"


async def _one_turn(p: Probe) -> str:
    async with p.session() as d:
        mark = len(d.frames)
        turn = await d.prompt(p.prompts.answer)
    turn_id = turn.turn_id
    starts = [f for f in d.frames[mark:] if isinstance(f, TurnStartFrame)]
    ends = [f for f in d.frames if isinstance(f, TurnEndFrame) and f.payload.turn_id == turn_id]
    if len(starts) != 1:
        fail(
            "one-turn",
            f"one prompt gave {len(starts)} session.turn.start",
            d,
            _index(d, starts[-1]),
        )
    if len(ends) != 1:
        fail(
            "one-turn",
            f"turn {turn_id} ended {len(ends)} times: one prompt gives exactly one "
            "session.turn.end",
            d,
            _index(d, ends[-1]),
        )
    if turn.stop_reason not in ("end_turn", "max_tokens", "refusal"):
        fail(
            "one-turn",
            f"the answer prompt ended {turn.stop_reason!r}, not end_turn",
            d,
            _index(d, turn.end),
        )
    return f"ended {turn.stop_reason}"


async def _busy_turn(p: Probe, d: SessionDriver) -> str:
    """Start the busy prompt and return its turn id once the agent streams something."""
    start = await d.start_prompt(_needs(p.prompts.busy, _NO_BUSY))
    turn_id = start.payload.turn_id
    await d.wait_for(
        Envelope,
        where=lambda f: (
            f.type.startswith(("agent.", "tool."))
            and getattr(f.payload, "turn_id", None) == turn_id
        ),
    )
    return turn_id


async def _prompt_in_progress(p: Probe) -> None:
    _needs(p.prompts.busy, _NO_BUSY)
    async with p.session() as d:
        turn_id = await _busy_turn(p, d)
        mark = len(d.frames)
        second = d.control.prompt("a second prompt while one is running")
        await d.send(second)
        error = await d.wait_for(SessionErrorFrame, after=mark)
        await d.send(d.control.abort(turn_id))
        turn = await d.wait_turn(turn_id)
    inside = d.frames[_index(d, turn.frames[0]) + 1 : _index(d, turn.end)]
    for frame in inside:
        if isinstance(frame, TurnStartFrame):
            fail(
                "prompt-in-progress",
                f"a second turn ({frame.payload.turn_id}) started while turn {turn_id} ran: "
                "a prompt during a turn must get PROMPT_IN_PROGRESS, never reach the agent",
                d,
                _index(d, frame),
            )
    for index, frame in enumerate(d.frames):
        if (
            isinstance(frame, TurnStartFrame)
            and frame.payload.prompt_id == second.payload.prompt_id
        ):
            fail(
                "prompt-in-progress",
                "the prompt sent during a turn was run later: it must be refused, not queued",
                d,
                index,
            )
    if error.payload.error_code != "PROMPT_IN_PROGRESS" or error.payload.fatal:
        fail(
            "prompt-in-progress",
            f"a second prompt during a turn got session.error {error.payload.error_code} "
            f"(fatal: {error.payload.fatal}), not PROMPT_IN_PROGRESS (fatal: false)",
            d,
            _index(d, error),
        )


async def _abort_cancels(p: Probe) -> str:
    _needs(p.prompts.busy, _NO_BUSY)
    async with p.session() as d:
        turn_id = await _busy_turn(p, d)
        await d.send(d.control.abort(turn_id))
        turn = await d.wait_turn(turn_id)
    if turn.stop_reason != "cancelled":
        fail(
            "abort-cancels",
            f"an aborted turn ended {turn.stop_reason!r}, not 'cancelled'",
            d,
            _index(d, turn.end),
        )
    return "" if _features(d).abort else "the runtime ended it (the adapter claims no abort)"


async def _permission_deadline(p: Probe) -> str:
    tool = _needs(p.prompts.tool, _NO_TOOL)
    async with p.session(policy=never_answer) as d:
        _claims(_features(d), "permission_requests")
        start = await d.start_prompt(tool)
        turn_id = start.payload.turn_id
        request = await d.wait_for(
            InteractionRequestFrame, where=lambda f: f.payload.turn_id == turn_id
        )
        interaction_id = request.payload.interaction_id
        resolved = await d.wait_for(
            InteractionResolvedFrame, where=lambda f: f.payload.interaction_id == interaction_id
        )
        mark = len(d.frames)
        await d.send(d.control.respond(interaction_id, "allow"))
        late = await d.wait_for(SessionErrorFrame, after=mark)
        turn = await d.wait_turn(turn_id)
    if resolved.payload.outcome != "timed_out":
        fail(
            "permission-deadline",
            f"an unanswered permission was resolved {resolved.payload.outcome!r} "
            f"(decided_by {resolved.payload.decided_by!r}), not 'timed_out' by its deadline",
            d,
            _index(d, resolved),
        )
    if late.payload.error_code != "UNKNOWN_INTERACTION":
        fail(
            "permission-deadline",
            f"a late answer got session.error {late.payload.error_code}, not UNKNOWN_INTERACTION",
            d,
            _index(d, late),
        )
    _tool_refused(d, turn.frames, request.payload, "permission-deadline", "timed out")
    return ""


def _tool_refused(
    d: SessionDriver,
    frames: Sequence[ClientFrame],
    request: InteractionRequest,
    rule: str,
    how: str,
) -> None:
    call_id = request.context.tool_call_id if request.context is not None else None
    for frame in frames:
        if (
            isinstance(frame, ToolInvokeResultFrame)
            and call_id is not None
            and frame.payload.invocation_id == call_id
            and not frame.payload.is_error
        ):
            fail(
                rule,
                f"tool call {call_id} ran although its permission {how}: its "
                "tool.invoke.result is not an error (only an explicit allow allows)",
                d,
                _index(d, frame),
            )


async def _unsupported_answered(p: Probe) -> str:
    async with p.session() as d:
        features = _features(d)
        asked = []
        if not features.context_compaction:
            asked.append(("compaction", d.control.compact()))
        if not features.plan_mode:
            asked.append(("mode switch", d.control.switch_mode("plan")))
        if not features.host_tools:
            asked.append(("tool catalog", d.control.publish_tools([KIT_HOST_TOOL])))
        if not features.model_change:
            asked.append(("model change", d.control.set_model("kit/unknown-model")))
        if not features.model_list:
            asked.append(("model list", d.control.list_models()))
        if not features.plan_seeding:
            asked.append(("plan", d.control.set_plan([{"content": "kit step"}])))
        if not asked:
            raise RuleSkipped("the adapter claims every optional operation")
        for what, frame in asked:
            mark = len(d.frames)
            await d.send(frame)
            try:
                error = await d.wait_for(SessionErrorFrame, after=mark)
            except TimeoutError:
                fail(
                    "unsupported-answered",
                    f"an unsupported {what} was dropped: no session.error UNSUPPORTED came",
                    d,
                    None,
                )
            if error.payload.error_code != "UNSUPPORTED" or error.payload.fatal:
                fail(
                    "unsupported-answered",
                    f"an unsupported {what} got {error.payload.error_code} "
                    f"(fatal: {error.payload.fatal}), not UNSUPPORTED (fatal: false)",
                    d,
                    _index(d, error),
                )
    return ", ".join(what for what, _ in asked)


async def _explicit_end(p: Probe) -> str:
    async with p.session() as d:  # ended without a prompt
        pass
    _closed_last(d)
    async with p.session() as d:
        await d.prompt(p.prompts.tool or p.prompts.answer)
    _closed_last(d)
    return ""


def _closed_last(d: SessionDriver) -> None:
    closed = d.of_type(SessionClosedFrame)
    if not closed or d.frames[-1] is not closed[0]:
        fail("explicit-end", "session.closed is not the last frame", d, len(d.frames) - 1)
    if closed[0].payload.reason != "explicit":
        fail(
            "explicit-end",
            f"an explicit end closed with reason {closed[0].payload.reason!r}",
            d,
            len(d.frames) - 1,
        )


# ------------------------------------------------------------------ CAPABILITY


async def _compaction(p: Probe) -> str:
    async with p.session() as d:
        _claims(_features(d), "context_compaction")
        await d.prompt(p.prompts.answer)
        mark = len(d.frames)
        await d.send(d.control.compact())
        found = await d.wait_for(
            Envelope,
            after=mark,
            where=lambda f: (
                isinstance(f, SessionCompactedFrame)
                or (isinstance(f, SessionErrorFrame) and f.payload.error_code == "UNSUPPORTED")
            ),
        )
    if not isinstance(found, SessionCompactedFrame):
        fail(
            "compaction",
            "claims context_compaction but a compaction was answered UNSUPPORTED",
            d,
            _index(d, found),
        )
    return ""


async def _plan_mode(p: Probe) -> str:
    async with p.session() as d:
        _claims(_features(d), "plan_mode")
        mark = len(d.frames)
        await d.send(d.control.switch_mode("plan"))
        await d.prompt(p.prompts.answer)
        await d.send(d.control.switch_mode("default"))
        await d.prompt(p.prompts.answer)
    for index in range(mark, len(d.frames)):
        frame = d.frames[index]
        if isinstance(frame, SessionErrorFrame):
            fail(
                "plan-mode",
                f"claims plan_mode but a mode switch got session.error {frame.payload.error_code}",
                d,
                index,
            )
    return ""


async def _host_tool_call(p: Probe) -> str:
    async with p.session() as d:
        _claims(_features(d), "host_tools")
        await d.send(d.control.publish_tools([KIT_HOST_TOOL]))
        updated = await d.wait_for(Envelope, where=lambda f: f.type in _CATALOG_ANSWERS)
        if not isinstance(updated, ToolCatalogUpdatedFrame) or updated.payload.tools != [
            "kit_echo"
        ]:
            fail("host-tool-call", "publishing kit_echo was not confirmed", d, _index(d, updated))
        prompt = _needs(p.prompts.host_tool, _NO_HOST_TOOL)
        start = await d.start_prompt(prompt)
        request = await d.wait_for(
            ToolInvokeRequestFrame, where=lambda f: f.payload.executor == "master"
        )
        invocation_id = request.payload.invocation_id
        await d.send(d.control.tool_stream(invocation_id, "kit progress"))
        await d.send(d.control.tool_result(invocation_id, "kit says hello"))
        turn = await d.wait_turn(start.payload.turn_id)
    results = [
        f for f in turn.of_type(ToolInvokeResultFrame) if f.payload.invocation_id == invocation_id
    ]
    if len(results) != 1 or results[0].payload.resolution != "answered":
        fail("host-tool-call", "the answered host call has no one answered result", d, None)
    if turn.stop_reason != "end_turn":
        fail("host-tool-call", f"the turn ended {turn.stop_reason}", d, _index(d, turn.end))
    return ""


async def _model_change(p: Probe) -> str:
    async with p.session() as d:
        features = _features(d)
        _claims(features, "model_change")
        current = d.of_type(SessionCapabilitiesFrame)[0].payload.agent
        model = current.model if current is not None else None
        if model is None and features.model_list:
            await d.send(d.control.list_models())
            listed = await d.wait_for(ModelListFrame)
            model = listed.payload.models[0].id if listed.payload.models else None
        model = _needs(model, "names no model (agent.model) and lists none")
        await d.send(d.control.set_model(model))
        changed = await d.wait_for(Envelope, where=lambda f: f.type in _MODEL_ANSWERS)
        if not isinstance(changed, ModelChangedFrame):
            fail("model-change", f"a change to {model!r} was refused", d, _index(d, changed))
        mark = len(d.frames)
        await d.send(d.control.set_model("kit/no-such-model"))
        refused = await d.wait_for(Envelope, after=mark, where=lambda f: f.type in _MODEL_ANSWERS)
        if not isinstance(refused, SessionErrorFrame) or refused.payload.fatal:
            fail("model-change", "an unknown model was not refused", d, _index(d, refused))
        await d.prompt(p.prompts.answer)
    return model


async def _permission_request(p: Probe) -> str:
    tool = _needs(p.prompts.tool, _NO_TOOL)
    async with p.session(policy=allow_all) as d:
        _claims(_features(d), "permission_requests")
        allowed = await d.prompt(tool)
        d.policy = deny_all
        denied = await d.prompt(tool)
    for turn, outcome in ((allowed, "allowed"), (denied, "denied")):
        requests = [
            f
            for f in turn.of_type(InteractionRequestFrame)
            if f.payload.interaction_type == "PERMISSION"
        ]
        if not requests:
            fail(
                "permission-request",
                "the tool prompt gave no agent.interaction.request PERMISSION",
                d,
                _index(d, turn.end),
            )
        request = requests[0]
        context = request.payload.context
        if context is None or not context.tool_name:
            fail(
                "permission-request",
                "a PERMISSION request does not name its tool in context.tool_name",
                d,
                _index(d, request),
            )
        resolved = [
            f
            for f in turn.of_type(InteractionResolvedFrame)
            if f.payload.interaction_id == request.payload.interaction_id
        ]
        if resolved and resolved[0].payload.outcome != outcome:
            fail(
                "permission-request",
                f"a permission the Master {outcome} was resolved {resolved[0].payload.outcome!r}",
                d,
                _index(d, resolved[0]),
            )
    _tool_refused(
        d,
        denied.frames,
        denied.of_type(InteractionRequestFrame)[0].payload,
        "permission-request",
        "was denied",
    )
    return f"tool {context.tool_name}"


async def _tool_events(p: Probe) -> str:
    tool = _needs(p.prompts.tool, _NO_TOOL)
    async with p.session(policy=allow_all) as d:
        _claims(_features(d), "tool_events")
        turn = await d.prompt(tool)
    calls = turn.of_type(ToolInvokeRequestFrame)
    if not calls:
        fail("tool-events", "the tool prompt gave no tool.invoke.request", d, _index(d, turn.end))
    results = {f.payload.invocation_id for f in turn.of_type(ToolInvokeResultFrame)}
    for call in calls:
        if call.payload.invocation_id not in results:
            fail(
                "tool-events",
                f"tool call {call.payload.invocation_id} got no tool.invoke.result",
                d,
                _index(d, call),
            )
    return ", ".join(sorted({c.payload.tool_name for c in calls}))


async def _thinking(p: Probe) -> str:
    async with p.session() as d:
        _claims(_features(d), "thinking")
        turn = await d.prompt(p.prompts.answer)
    deltas: dict[int, str] = {}
    for frame in turn.frames:
        if frame.type == "agent.thinking.delta":
            deltas[frame.payload.index] = deltas.get(frame.payload.index, "") + frame.payload.text
        elif frame.type == "agent.thinking.done":
            streamed = deltas.pop(frame.payload.index, None)
            if (
                streamed is not None
                and not frame.payload.redacted
                and frame.payload.text != streamed
            ):
                fail(
                    "thinking",
                    f"thinking block {frame.payload.index} is done with other text than "
                    "its deltas streamed",
                    d,
                    _index(d, frame),
                )
    if not turn.of_type("agent.thinking.done"):
        raise RuleSkipped("the answer prompt made the agent stream no thinking")
    return ""


# ------------------------------------------------------------------ ADVISORY


async def _abort_latency(p: Probe) -> str:
    _needs(p.prompts.busy, _NO_BUSY)
    async with p.session() as d:
        turn_id = await _busy_turn(p, d)
        sent = time.monotonic()
        await d.send(d.control.abort(turn_id))
        await d.wait_turn(turn_id)
        took = time.monotonic() - sent
    return _advise(f"the aborted turn ended in {took * 1000:.0f} ms", took, ABORT_ADVISED_S)


async def _close_latency(p: Probe) -> str:
    async with p.session() as d:
        await d.prompt(p.prompts.answer)
        sent = time.monotonic()
        await d.end()
        took = time.monotonic() - sent
    return _advise(f"session.closed came {took * 1000:.0f} ms after the end", took, CLOSE_ADVISED_S)


def _advise(measured: str, took: float, limit: float) -> str:
    if took > limit:
        raise RuleAdvice(f"{measured} (advised: under {limit * 1000:.0f} ms)")
    return measured


RULES: tuple[Rule, ...] = (
    Rule(
        "capabilities-first",
        "MUST",
        "session.capabilities comes first and states the adapter_type a Master reaches "
        "the adapter by",
        _capabilities_first,
    ),
    Rule("one-turn", "MUST", "a prompt gives exactly one turn start and one turn end", _one_turn),
    Rule(
        "prompt-in-progress",
        "MUST",
        "a second prompt during a turn gets PROMPT_IN_PROGRESS and starts no turn",
        _prompt_in_progress,
    ),
    Rule("abort-cancels", "MUST", "an aborted turn ends cancelled", _abort_cancels),
    Rule(
        "permission-deadline",
        "MUST",
        "an unanswered permission is denied (timed_out) at its deadline, the tool does not "
        "run, and a late answer is reported UNKNOWN_INTERACTION",
        _permission_deadline,
    ),
    Rule(
        "unsupported-answered",
        "MUST",
        "operations the adapter does not claim (compaction, mode switch, host tools, model "
        "change and list, plan seeding) are answered UNSUPPORTED",
        _unsupported_answered,
    ),
    Rule(
        "explicit-end",
        "MUST",
        "an explicit end gives session.closed last (reason explicit) and leaves no process",
        _explicit_end,
    ),
    Rule("compaction", "CAPABILITY", "a compaction gives session.compacted", _compaction),
    Rule("plan-mode", "CAPABILITY", "switches to plan and back are accepted", _plan_mode),
    Rule(
        "permission-request",
        "CAPABILITY",
        "the tool prompt asks PERMISSION naming context.tool_name; allow and deny are "
        "resolved as answered and a denied tool does not run",
        _permission_request,
    ),
    Rule(
        "tool-events",
        "CAPABILITY",
        "the tool prompt reports its calls as tool.invoke.request, each with a result",
        _tool_events,
    ),
    Rule(
        "thinking",
        "CAPABILITY",
        "each streamed thinking block is done with the text its deltas streamed",
        _thinking,
    ),
    Rule(
        "host-tool-call",
        "CAPABILITY",
        "a published host tool is confirmed, and the host tool prompt's call is asked of "
        "the Master (executor master) and ends with the Master's result",
        _host_tool_call,
    ),
    Rule(
        "model-change",
        "CAPABILITY",
        "a change to a known model is confirmed; an unknown one is refused and the session goes on",
        _model_change,
    ),
    Rule("abort-latency", "ADVISORY", "an abort ends its turn within 200 ms", _abort_latency),
    Rule("close-latency", "ADVISORY", "an explicit end closes within 1 s", _close_latency),
)
"""Every rule, in the order they run. Every session of every rule is also checked
against the invariants (``invariants/<rule>``), the features it claims
(``honest-features``) and for processes left behind (``no-process-left``)."""

__all__ = [
    "RULES",
    "ConformanceReport",
    "ConformanceSubject",
    "Prompts",
    "Rule",
    "RuleResult",
    "check_adapter",
    "run_rule",
    "select_rules",
]
