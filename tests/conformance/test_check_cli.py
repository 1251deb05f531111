"""``rawp-adapters check`` run as a user runs it: the installed console script in a
process of its own, on the README's command lines, with the kit's defaults (no
deadline or compaction setting of the adapter's own)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from tests.process.real_peers import PEERS
from tests.support.llm_openai import ScriptedOpenAI
from tests.support.peers import PeerName, make_peer
from tests.support.readme_checks import readme_check, run_check

COMPACTED_AFTER_A_SHORT_TURN = {"omp": ": nothing to compact (compacted: false)", "pi": "  ("}
"""How the compaction rule passes on each agent with its own settings: omp finds one
short turn too small to compact, pi compacts it."""


def test_the_readmes_check_of_the_demo_core_passes_as_printed() -> None:
    out = run_check(readme_check("sdk"))
    assert "PASS  MUST        permission-deadline" in out
    assert "PASS  CAPABILITY  permission-request: tool write_file" in out


def on_path(name: PeerName, llm: ScriptedOpenAI, home: Path) -> dict[str, str]:
    """An environment in which ``name`` is the installed agent, set up as a user would
    for a model: the scripted one at ``llm``, in a home of its own."""
    peer = make_peer(
        name,
        llm_base_url=llm.base_url,
        home=home,
        # DEFAULT_SETTINGS lowers it so that other tests can compact; a user's agent
        # keeps its own default (both: 20000).
        settings={"compaction": {"keepRecentTokens": 20_000}},
    )
    bin_dir = home / "bin"
    bin_dir.mkdir()
    mode_at = peer.argv.index("--mode")
    runtime = shlex.join(peer.argv[:mode_at])
    own_flags = shlex.join(peer.argv[mode_at + 2 :])  # the model, a fast start
    shim = bin_dir / name
    shim.write_text(f'#!/bin/sh\nexec {runtime} "$@" {own_flags}\n', encoding="utf-8")
    shim.chmod(0o755)
    return {**peer.env, "PATH": f"{bin_dir}:{peer.env['PATH']}"}


def with_values(argv: list[str], values: dict[str, str]) -> list[str]:
    """``argv`` with the value after each option of ``values`` replaced."""
    return [
        values[argv[i - 1]] if i and argv[i - 1] in values else arg for i, arg in enumerate(argv)
    ]


@pytest.mark.peers
@pytest.mark.parametrize("name", PEERS)
def test_the_readmes_check_of_a_real_agent_passes_with_a_scripted_model(
    name: PeerName, tmp_path: Path
) -> None:
    """The README's process command line as printed (pi: its command instead of omp's)
    for an agent set up with the scripted model, given prompts that model answers."""
    printed = readme_check("process")
    argv = with_values(
        [arg.replace('["omp",', f'["{name}",') for arg in printed],
        {"--tool-prompt": "RUN_BASH echo hi", "--busy-prompt": "SLOW_STREAM 200 50"},
    )
    with ScriptedOpenAI() as llm:
        out = run_check(argv, env=on_path(name, llm, tmp_path))
    assert "PASS  MUST        permission-deadline" in out
    assert f"PASS  CAPABILITY  compaction{COMPACTED_AFTER_A_SHORT_TURN[name]}" in out
