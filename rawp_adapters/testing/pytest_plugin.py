"""The conformance kit as pytest tests (registered through the ``pytest11`` entry point,
so it is active wherever rawp-adapters is installed).

Define a ``rawp_subject`` fixture and subclass :class:`ConformanceTests`; every rule of
the kit becomes one test, ``test_rule[MUST:one-turn]`` and so on::

    import pytest
    from rawp_adapters.testing import ConformanceSubject, Prompts
    from rawp_adapters.testing.pytest_plugin import ConformanceTests


    @pytest.fixture
    def rawp_subject(tmp_path):
        return ConformanceSubject(
            make_adapter=lambda: MyAdapter.from_settings({...}),
            prompts=Prompts(answer="Say hello.", tool="RUN_BASH ls", busy="COUNT 1000"),
        )


    class TestMyAdapter(ConformanceTests):
        pass

A rule that does not apply is skipped with its reason, a failure shows the rule and
the frames around it, and an advisory rule over its limit warns
(:class:`ConformanceAdvisory`) but passes. ``--rawp-rule ID`` (repeatable) runs only
those rules. The tests are async on the ``anyio`` marker (``anyio_backend`` picks the
event loop, asyncio by default).
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from rawp_adapters.testing._probe import KnownClaims
    from rawp_adapters.testing._rule import Rule
    from rawp_adapters.testing._subject import ConformanceSubject

_KNOWN_CLAIMS = pytest.StashKey[dict[tuple[str, str], "KnownClaims"]]()
"""What each subject's sessions claimed, by test class and parameters other than the
rule: a later rule for a feature not claimed is skipped without starting the agent."""


class ConformanceAdvisory(UserWarning):
    """An advisory rule's limit was exceeded (a timing); never a failure."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rawp-adapters", "rawp-adapters conformance kit")
    group.addoption(
        "--rawp-rule",
        action="append",
        default=None,
        metavar="ID",
        help="run only this conformance rule (repeatable; e.g. one-turn)",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "rawp_rule" not in metafunc.fixturenames:
        return
    from rawp_adapters.testing._catalogue import select_rules

    try:
        rules = select_rules(metafunc.config.getoption("rawp_rule"))
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    metafunc.parametrize("rawp_rule", rules, ids=[f"{r.tier}:{r.id}" for r in rules])


class ConformanceTests:
    """Every rule of the kit, one test each, against the ``rawp_subject`` fixture."""

    @pytest.mark.anyio
    async def test_rule(
        self, rawp_subject: ConformanceSubject, rawp_rule: Rule, request: pytest.FixtureRequest
    ) -> None:
        from rawp_adapters.testing._probe import KnownClaims
        from rawp_adapters.testing._runner import run_rule

        known = request.config.stash.setdefault(_KNOWN_CLAIMS, {})
        params = getattr(request.node, "callspec", None)
        others = {} if params is None else params.params
        subject = repr(sorted((k, repr(v)) for k, v in others.items() if k != "rawp_rule"))
        result = await run_rule(
            rawp_subject,
            rawp_rule,
            known.setdefault((request.node.parent.nodeid, subject), KnownClaims()),
        )
        if result.status == "skipped":
            pytest.skip(f"{rawp_rule.id}: {result.detail}")
        if result.status == "failed":
            pytest.fail(
                f"{rawp_rule.tier} rule {rawp_rule.id}: {rawp_rule.summary}\n{result.detail}",
                pytrace=False,
            )
        if result.status == "advised":
            warnings.warn(ConformanceAdvisory(f"{rawp_rule.id}: {result.detail}"), stacklevel=1)
