"""The MUST rules: what every adapter keeps; a failure fails the run."""

from __future__ import annotations

from rawp_adapters._frames import (
    InteractionRequestFrame,
    InteractionResolvedFrame,
    SessionClosedFrame,
    SessionErrorFrame,
    TurnEndFrame,
    TurnStartFrame,
)
from rawp_adapters.host import SessionLike, never_answer
from rawp_adapters.testing._driver import SessionDriver
from rawp_adapters.testing._outcomes import RuleSkipped, fail
from rawp_adapters.testing._probe import Probe
from rawp_adapters.testing._rules.shared import (
    NO_BUSY,
    NO_TOOL,
    busy_turn,
    frame_index,
    needs,
    tool_refused,
)
from rawp_adapters.testing._session_checks import claimed_features
from rawp_adapters.testing._subject import KIT_HOST_TOOL


async def capabilities_first(p: Probe) -> str:
    async with p.session() as d:
        features = claimed_features(d)
    return f"adapter_type {features.adapter_type}"


async def one_turn(p: Probe) -> str:
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
            frame_index(d, starts[-1]),
        )
    if len(ends) != 1:
        fail(
            "one-turn",
            f"turn {turn_id} ended {len(ends)} times: one prompt gives exactly one "
            "session.turn.end",
            d,
            frame_index(d, ends[-1]),
        )
    if turn.stop_reason not in ("end_turn", "max_tokens", "refusal"):
        fail(
            "one-turn",
            f"the answer prompt ended {turn.stop_reason!r}, not end_turn",
            d,
            frame_index(d, turn.end),
        )
    return f"ended {turn.stop_reason}"


async def prompt_in_progress(p: Probe) -> None:
    needs(p.prompts.busy, NO_BUSY)
    async with p.session() as d:
        turn_id = await busy_turn(p, d)
        mark = len(d.frames)
        second = d.control.prompt("a second prompt while one is running")
        await d.send(second)
        error = await d.wait_for(SessionErrorFrame, after=mark)
        await d.send(d.control.abort(turn_id))
        turn = await d.wait_turn(turn_id)
    inside = d.frames[frame_index(d, turn.frames[0]) + 1 : frame_index(d, turn.end)]
    for frame in inside:
        if isinstance(frame, TurnStartFrame):
            fail(
                "prompt-in-progress",
                f"a second turn ({frame.payload.turn_id}) started while turn {turn_id} ran: "
                "a prompt during a turn must get PROMPT_IN_PROGRESS, never reach the agent",
                d,
                frame_index(d, frame),
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
            frame_index(d, error),
        )


async def abort_cancels(p: Probe) -> str:
    needs(p.prompts.busy, NO_BUSY)
    async with p.session() as d:
        turn_id = await busy_turn(p, d)
        await d.send(d.control.abort(turn_id))
        turn = await d.wait_turn(turn_id)
    if turn.stop_reason != "cancelled":
        fail(
            "abort-cancels",
            f"an aborted turn ended {turn.stop_reason!r}, not 'cancelled'",
            d,
            frame_index(d, turn.end),
        )
    return "" if claimed_features(d).abort else "the runtime ended it (the adapter claims no abort)"


async def permission_deadline(p: Probe) -> str:
    tool = needs(p.prompts.tool, NO_TOOL)
    async with p.session(policy=never_answer, claiming="permission_requests") as d:
        start = await d.start_prompt(tool)
        turn_id = start.payload.turn_id
        request = await d.wait_for(
            InteractionRequestFrame, where=lambda f: f.payload.turn_id == turn_id
        )
        interaction_id = request.payload.interaction_id
        try:
            resolved = await d.wait_for(
                InteractionResolvedFrame,
                where=lambda f: f.payload.interaction_id == interaction_id,
                after=frame_index(d, request),
            )
        except TimeoutError as exc:
            fail(
                "permission-deadline",
                f"the unanswered permission request (timeout_ms {request.payload.timeout_ms}; "
                f"the session's default {p.subject.permission_timeout_ms}) was not resolved "
                f"by its deadline: {exc}",
                d,
                frame_index(d, request),
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
            frame_index(d, resolved),
        )
    if late.payload.error_code != "UNKNOWN_INTERACTION":
        fail(
            "permission-deadline",
            f"a late answer got session.error {late.payload.error_code}, not UNKNOWN_INTERACTION",
            d,
            frame_index(d, late),
        )
    tool_refused(d, turn.frames, request.payload, "permission-deadline", "timed out")
    return ""


async def unsupported_answered(p: Probe) -> str:
    async with p.session() as d:
        features = claimed_features(d)
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
                    frame_index(d, error),
                )
    return ", ".join(what for what, _ in asked)


async def explicit_end(p: Probe) -> str:
    async with p.session() as d:  # ended without a prompt
        pass
    _closed_last(d)
    async with p.session() as d:
        await d.prompt(p.prompts.tool or p.prompts.answer)
    _closed_last(d)
    return ""


def _closed_last(d: SessionDriver[SessionLike]) -> None:
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
