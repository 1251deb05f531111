"""A conformance run in one call: every rule of the kit (:mod:`._runner`), raising on
the first report with a failure.

from rawp_adapters.testing import run_conformance

@pytest.mark.anyio
async def test_my_adapter_keeps_the_dps_rules(tmp_path):
    await run_conformance(lambda: MyAdapter.from_settings({...}), workspace=tmp_path)
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rawp_adapters._adapter import Adapter
from rawp_adapters.testing._runner import check_adapter
from rawp_adapters.testing._subject import ConformanceSubject, Prompts


async def run_conformance(
    make_adapter: Callable[[], Adapter],
    *,
    workspace: str | Path,
    prompt: str = "Say hello.",
    long_prompt: str | None = None,
    tool_prompt: str | None = None,
    timeout: float = 60.0,
) -> None:
    """Put fresh sessions of the adapter through every rule; raise ``AssertionError``
    with the report if any rule failed.

    ``long_prompt`` (a prompt the agent takes a while over) enables the abort and
    one-prompt rules, ``tool_prompt`` (a permission-gated tool call) the permission ones.
    """
    subject = ConformanceSubject(
        make_adapter,
        workspace=workspace,
        prompts=Prompts(answer=prompt, tool=tool_prompt, busy=long_prompt),
        timeout=timeout,
    )
    report = await check_adapter(subject)
    if not report.ok:
        raise AssertionError("the adapter breaks the contract:\n" + report.format())
