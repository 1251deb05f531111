"""``rawp-adapters check``: the kit against an installed adapter from the command line."""

from __future__ import annotations

import pytest

from rawp_adapters.cli import main

DEMO = [
    "--setting",
    "core=demo",
    "--setting",
    'core_options={"delay_ms": 20}',
    "--setting",
    "permission_timeout_ms=300",
]


def test_the_demo_core_passes_every_rule_it_can_and_says_why_it_skips_the_rest(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(
        ["check", "sdk", *DEMO, "--tool-prompt", "Write notes.txt", "--busy-prompt", "wait"]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "PASS  MUST        permission-deadline" in out
    assert "PASS  CAPABILITY  permission-request: tool write_file" in out
    assert "SKIP  CAPABILITY  compaction: the adapter does not claim context_compaction" in out
    assert out.splitlines()[-1] == "12 passed, 4 skipped"


def test_rules_that_need_a_prompt_not_given_are_skipped_with_the_option_to_give(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["check", "sdk", *DEMO, "--rule", "abort-cancels", "--rule", "permission-request"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "SKIP  MUST        abort-cancels: needs Prompts.busy" in out
    assert "SKIP  CAPABILITY  permission-request: needs Prompts.tool" in out


def test_a_process_plugin_is_checked_as_the_adapter_type_a_master_asks_for(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["check", "process", "--setting", "protocol=nope"])
    assert code == 2
    assert "no adapter 'process.nope' is installed" in capsys.readouterr().err


def test_an_unknown_rule_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["check", "sdk", "--rule", "no-such-rule"])
    assert exit_info.value.code == 2
    assert "unknown rule(s) no-such-rule; known: capabilities-first" in capsys.readouterr().err


def test_a_rule_that_waits_in_vain_says_what_it_waited_for_and_what_came_instead(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(
        [
            "check",
            "sdk",
            "--setting",
            'core_options={"delay_ms": 0}',
            "--tool-prompt",
            "Write notes.txt",
            "--rule",
            "permission-deadline",
            "--permission-timeout-ms",
            "600000",
            "--timeout",
            "3",
        ]
    )
    out = capsys.readouterr().out
    assert code == 1, out
    failure = out.splitlines()[0]
    assert "the unanswered permission request (timeout_ms 600000" in failure
    assert "waited for a matching agent.interaction.resolved from frame" in failure
    assert "but 3 s passed; what came from frame" in failure
    assert failure.endswith("agent.interaction.request, agent.state.changed")


def test_an_agent_that_cannot_start_fails_each_rule_with_its_reason_and_no_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["check", "process", "--setting", 'command=["/nonexistent/agent"]'])
    captured = capsys.readouterr()
    assert code == 1, captured.out
    assert "Traceback" not in captured.out + captured.err
    failures = [line for line in captured.out.splitlines() if line.startswith("FAIL")]
    assert failures, captured.out
    assert "the session ended under the rule" in captured.out
    assert "SPAWN_FAILED" in captured.out
