"""The conformance kit's rules, in the order they run, and choosing some by id."""

from __future__ import annotations

from collections.abc import Iterable

from rawp_adapters.testing._rule import Rule
from rawp_adapters.testing._rules import advisory, capability, must

RULES: tuple[Rule, ...] = (
    Rule(
        "capabilities-first",
        "MUST",
        "session.capabilities comes first and states the adapter_type a Master reaches "
        "the adapter by",
        must.capabilities_first,
    ),
    Rule(
        "one-turn", "MUST", "a prompt gives exactly one turn start and one turn end", must.one_turn
    ),
    Rule(
        "prompt-in-progress",
        "MUST",
        "a second prompt during a turn gets PROMPT_IN_PROGRESS and starts no turn",
        must.prompt_in_progress,
    ),
    Rule("abort-cancels", "MUST", "an aborted turn ends cancelled", must.abort_cancels),
    Rule(
        "permission-deadline",
        "MUST",
        "an unanswered permission is denied (timed_out) at its deadline, the tool does not "
        "run, and a late answer is reported UNKNOWN_INTERACTION",
        must.permission_deadline,
    ),
    Rule(
        "unsupported-answered",
        "MUST",
        "operations the adapter does not claim (compaction, mode switch, host tools, model "
        "change and list, plan seeding) are answered UNSUPPORTED",
        must.unsupported_answered,
    ),
    Rule(
        "explicit-end",
        "MUST",
        "an explicit end gives session.closed last (reason explicit) and leaves no process",
        must.explicit_end,
    ),
    Rule(
        "compaction",
        "CAPABILITY",
        "a compaction is answered session.compacted (compacted: false when there was "
        "nothing to compact), not an error",
        capability.compaction,
    ),
    Rule("plan-mode", "CAPABILITY", "switches to plan and back are accepted", capability.plan_mode),
    Rule(
        "permission-request",
        "CAPABILITY",
        "the tool prompt asks PERMISSION naming context.tool_name; allow and deny are "
        "resolved as answered and a denied tool does not run",
        capability.permission_request,
    ),
    Rule(
        "tool-events",
        "CAPABILITY",
        "the tool prompt reports its calls as tool.invoke.request, each with a result",
        capability.tool_events,
    ),
    Rule(
        "thinking",
        "CAPABILITY",
        "each streamed thinking block is done with the text its deltas streamed",
        capability.thinking,
    ),
    Rule(
        "host-tool-call",
        "CAPABILITY",
        "a published host tool is confirmed, and the host tool prompt's call is asked of "
        "the Master (executor master) and ends with the Master's result",
        capability.host_tool_call,
    ),
    Rule(
        "model-change",
        "CAPABILITY",
        "a change to a known model is confirmed; an unknown one is refused and the session goes on",
        capability.model_change,
    ),
    Rule(
        "abort-latency", "ADVISORY", "an abort ends its turn within 200 ms", advisory.abort_latency
    ),
    Rule("close-latency", "ADVISORY", "an explicit end closes within 1 s", advisory.close_latency),
)
"""Every rule, in the order they run. Every session of every rule is also checked
against the invariants (``invariants/<rule>``), the features it claims
(``honest-features``) and for processes left behind (``no-process-left``)."""


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
