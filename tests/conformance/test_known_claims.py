"""A rule for a feature that an earlier session of the run did not claim is skipped
without starting the agent: through ``check_adapter``, ``rawp-adapters check --jobs``
(the first rule's claims reach the workers) and the pytest plugin (by test class)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from rawp_adapters import Adapter, SessionContext, Turn, TurnResult
from rawp_adapters.frames import Features, TextDelta
from rawp_adapters.testing import ConformanceSubject, FunctionAdapter, Prompts, check_adapter
from tests.conformance.test_check_jobs import check_with_barrier_agents

pytestmark = pytest.mark.anyio

NOT_CLAIMED = ["plan-mode", "host-tool-call", "model-change"]
"""Rules of features neither the function adapters here nor the fake RPC agent claim."""


async def answers(turn: Turn, ctx: SessionContext) -> TurnResult:
    await ctx.emit(TextDelta(turn_id=turn.turn_id, index=0, text="hi"))
    return TurnResult()


class CountedAdapters:
    """Builds function adapters that claim no optional feature, counting them."""

    def __init__(self) -> None:
        self.made = 0

    def __call__(self) -> Adapter:
        self.made += 1
        return FunctionAdapter(answers, features=Features(adapter_type="function"))


async def test_rules_of_features_not_claimed_after_a_first_session_start_no_agent() -> None:
    adapters = CountedAdapters()
    subject = ConformanceSubject(adapters, prompts=Prompts(answer="hello"), timeout=10)
    report = await check_adapter(subject, rules=["one-turn", *NOT_CLAIMED])
    assert [r.status for r in report.results] == ["passed"] + ["skipped"] * len(NOT_CLAIMED)
    assert report.results[1].detail == "the adapter does not claim plan_mode"
    assert adapters.made == 1, "only one-turn's session started an agent"


async def test_a_rule_of_a_feature_not_claimed_run_first_learns_it_from_a_session() -> None:
    adapters = CountedAdapters()
    subject = ConformanceSubject(adapters, prompts=Prompts(answer="hello"), timeout=10)
    report = await check_adapter(subject, rules=["plan-mode", "model-change"])
    assert [r.detail for r in report.results] == [
        "the adapter does not claim plan_mode",
        "the adapter does not claim model_change",
    ]
    assert adapters.made == 1


def test_check_jobs_workers_skip_rules_of_features_the_first_rule_saw_unclaimed(
    tmp_path: Path,
) -> None:
    """The fake agent records each start; only the first rule's agent starts."""
    checked = check_with_barrier_agents(tmp_path, 1, ["capabilities-first", *NOT_CLAIMED])
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.splitlines()[-1] == f"1 passed, {len(NOT_CLAIMED)} skipped"
    assert len(list(tmp_path.iterdir())) == 1, checked.stdout


def test_the_pytest_plugins_rules_after_the_first_skip_unclaimed_features_unstarted(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        textwrap.dedent(
            """
            import pytest
            from rawp_adapters.frames import Features, TextDelta
            from rawp_adapters.testing import ConformanceSubject, FunctionAdapter, Prompts
            from rawp_adapters.testing.pytest_plugin import ConformanceTests
            from rawp_adapters import TurnResult

            MADE = []

            async def answers(turn, ctx):
                await ctx.emit(TextDelta(turn_id=turn.turn_id, index=0, text="hi"))
                return TurnResult()

            def make():
                MADE.append(1)
                return FunctionAdapter(answers, features=Features(adapter_type="function"))

            @pytest.fixture
            def anyio_backend():
                return "asyncio"

            @pytest.fixture
            def rawp_subject():
                return ConformanceSubject(make, prompts=Prompts(answer="hello"), timeout=10)

            class TestCounted(ConformanceTests):
                pass

            def test_zz_agents_started():
                assert len(MADE) == 1
            """
        )
    )
    rules = ["one-turn", *NOT_CLAIMED]
    result = pytester.runpytest_subprocess(
        "-p", "no:xdist", *(arg for rule in rules for arg in ("--rawp-rule", rule))
    )
    result.assert_outcomes(passed=2, skipped=len(NOT_CLAIMED))
