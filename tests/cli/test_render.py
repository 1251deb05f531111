"""How ``rawp-adapters run`` shows frames on a terminal."""

from __future__ import annotations

import io
from typing import Any

from rawp_adapters.cli._render import (
    Console,
    TerminalView,
    safe_text,
    summarize_input,
    summarize_output,
)
from rawp_adapters.frames import frame_from_dict


def frame(frame_type: str, seq: int = 1, **payload: Any) -> Any:
    return frame_from_dict(
        {
            "type": frame_type,
            "session_id": "s",
            "seq": seq,
            "timestamp": "2026-01-01T00:00:00.000Z",
            "payload": payload,
        }
    )


def render(*frames: Any, styled: bool = False) -> str:
    out = io.StringIO()
    view = TerminalView(Console(out, styled=styled))
    for item in frames:
        view.show(item)
    return out.getvalue()


def test_thinking_is_prefixed_on_every_line_and_text_follows_on_its_own_line() -> None:
    shown = render(
        frame("agent.thinking.delta", turn_id="t", index=0, text="First\nsecond"),
        frame("agent.thinking.delta", turn_id="t", index=0, text=" half"),
        frame("agent.thinking.done", turn_id="t", index=0, text="First\nsecond half"),
        frame("agent.text.delta", turn_id="t", index=1, text="Hel"),
        frame("agent.text.delta", turn_id="t", index=1, text="lo"),
        frame("agent.text.done", turn_id="t", index=1, text="Hello"),
    )
    assert shown == "  | First\n  | second half\nHello\n"


def test_thinking_is_dimmed_on_a_terminal() -> None:
    shown = render(frame("agent.thinking.delta", turn_id="t", index=0, text="hmm"), styled=True)
    assert shown == "\x1b[2m  | \x1b[0m\x1b[2mhmm\x1b[0m"


def test_redacted_thinking_is_never_shown_as_text() -> None:
    shown = render(
        frame("agent.thinking.delta", turn_id="t", index=0, text="xxxx", redacted=True),
        frame("agent.thinking.delta", turn_id="t", index=0, text="yyyy", redacted=True),
        frame("agent.thinking.done", turn_id="t", index=0, text="xxxxyyyy", redacted=True),
    )
    assert shown == "  | [redacted thinking]\n"


def test_a_block_that_only_arrives_whole_is_still_shown() -> None:
    shown = render(frame("agent.text.done", turn_id="t", index=0, text="All at once"))
    assert shown == "All at once\n"


def test_tool_calls_show_name_input_and_result_on_their_own_lines() -> None:
    shown = render(
        frame("agent.text.delta", turn_id="t", index=0, text="Looking"),
        frame("tool.invoke.request", invocation_id="c1", tool_name="bash", input={"command": "ls"}),
        frame("tool.invoke.stream", invocation_id="c1", output="a\n"),
        frame("tool.invoke.result", invocation_id="c1", output_type="text", output="a\nb\n"),
        frame(
            "tool.invoke.result",
            invocation_id="c2",
            output_type="text",
            output="boom",
            is_error=True,
        ),
    )
    assert shown == (
        "Looking\n-> bash {command: ls}\n<- bash: a (+1 more line)\n<- c2 failed: boom\n"
    )


def test_errors_name_their_code_and_show_the_stderr_tail() -> None:
    shown = render(
        frame(
            "agent.error",
            severity="fatal",
            error_code="PROCESS_EXIT",
            message="exited with 3",
            stderr_tail="one\ntwo",
        ),
        frame("session.error", error_code="PROMPT_IN_PROGRESS", message="busy", fatal=False),
    )
    assert shown == (
        "error [PROCESS_EXIT]: exited with 3\n  one\n  two\n"
        "session error [PROMPT_IN_PROGRESS]: busy\n"
    )


def test_an_unusual_end_of_turn_or_session_is_said_and_a_normal_one_is_quiet() -> None:
    assert render(frame("session.turn.end", turn_id="t", stop_reason="end_turn")) == ""
    assert render(frame("session.closed", reason="explicit")) == ""
    shown = render(
        frame("session.turn.end", turn_id="t", stop_reason="cancelled"),
        frame("session.closed", reason="agent_exit", exit_code=137, signal="SIGKILL"),
    )
    assert (
        shown == "(turn ended: cancelled)\n(session closed: agent exit, exit code 137, SIGKILL)\n"
    )


def test_tool_input_summary_keeps_plain_values_bare_and_quotes_or_cuts_the_rest() -> None:
    assert summarize_input({"path": "notes.txt"}) == "{path: notes.txt}"
    assert summarize_input({"content": "two words\n", "n": 3}) == '{content: "two words\\n", n: 3}'
    assert summarize_input({}) == "{}"
    assert summarize_input({"content": "x" * 500}) == '{content: "' + "x" * 36 + "...}"
    many = summarize_input({f"key{i}": i for i in range(50)})
    assert len(many) == 100
    assert many.endswith("...}")


def test_tool_output_summary_is_the_first_line_and_a_count_of_the_rest() -> None:
    assert summarize_output(None) == "done"
    assert summarize_output("\n  \n") == "done"
    assert summarize_output("one\n\ntwo\nthree") == "one (+2 more lines)"
    assert summarize_output({"todos": 1}) == '{"todos": 1}'


HOSTILE = (
    "\x1b]52;c;ZXZpbA==\x07"  # OSC 52: write the clipboard
    "\x1b]0;owned\x07"  # set the window title
    "\x1b[2K\r"  # erase the line, back to its start
    "\x9b2J"  # 8-bit CSI: clear the screen
    "\u202eevil"  # right-to-left override
)


def test_agent_text_cannot_drive_the_terminal_anywhere_it_is_shown() -> None:
    shown = render(
        frame("agent.text.delta", turn_id="t", index=0, text=f"hi {HOSTILE}\r\nnext"),
        frame("agent.thinking.delta", turn_id="t", index=1, text=HOSTILE),
        frame("tool.invoke.request", invocation_id="c", tool_name=HOSTILE, input={"x": HOSTILE}),
        frame("tool.invoke.result", invocation_id="c", output_type="text", output=HOSTILE),
        frame("agent.error", severity="error", error_code="X", message=HOSTILE),
        styled=True,
    )
    own_styles = shown.replace("\x1b[2m", "").replace("\x1b[0m", "").replace("\x1b[1m", "")
    own_styles = own_styles.replace("\x1b[31m", "")
    for raw in ("\x1b", "\x07", "\x9b", "\u202e", "\r"):
        assert raw not in own_styles
    assert "\\x1b]52;c;ZXZpbA==\\x07" in shown, "shown as visible escapes instead"
    assert "hi " in shown
    assert "\nnext" in shown, "a CRLF line end is a line end"


def test_safe_text_keeps_ordinary_text_tabs_and_newlines() -> None:
    text = "tab\there\nnon-ASCII é 漢字 🙂"
    assert safe_text(text) == text


def test_a_plan_is_shown_whole_with_each_steps_status_between_the_answer_text() -> None:
    shown = render(
        frame("agent.text.delta", turn_id="t", index=0, text="Planning"),
        frame(
            "agent.plan.updated",
            entries=[
                {"content": "read", "status": "completed"},
                {"content": "write", "status": "in_progress"},
                {"content": "test\x1b[2J"},
            ],
        ),
    )
    assert shown == "Planning\nplan:\n  [x] read\n  [>] write\n  [ ] test\\x1b[2J\n"


def test_a_confirmed_model_change_is_noted() -> None:
    shown = render(frame("session.model.changed", model="fake/second", thinking_level="high"))
    assert shown == "(model: fake/second, thinking high)\n"
