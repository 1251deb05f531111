"""The inspector page in a real browser, driving real demo-core sessions (the SDK
adapter's scripted core: offline, no model)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.inspect.browser import screenshot
from tests.inspect.conftest import Server
from tests.inspect.recordings import with_delegated_host_call
from tests.process.helpers import fake_command

WRITE = "Write a short note to notes.txt"


def click_start(page: Page) -> None:
    """Start the session the form describes and wait until the page shows it (until
    then it may show another feed of the server, the newest when the page opened)."""
    with page.expect_response("**/api/sessions") as started:
        page.click("#start-button")
    expect(page.locator("#feed-select")).to_have_value(started.value.json()["feed_id"])


def start_demo(page: Page, *, deadline_ms: int | None = None) -> None:
    expect(page.locator("#adapter-select")).to_have_value(
        page.locator("#adapter-select option", has_text="sdk").first.get_attribute("value") or ""
    )
    if deadline_ms is not None:
        page.fill("#deadline", str(deadline_ms))
    click_start(page)
    expect(page.locator("#feed-status")).to_contain_text("session · live")
    expect(page.locator("#timeline [data-kind=session]")).to_contain_text("rawp-demo")


def prompt(page: Page, text: str) -> None:
    page.fill("#prompt-text", text)
    page.click("#send-prompt")


def question(page: Page) -> None:
    expect(page.locator("#timeline [data-kind=question]")).to_contain_text(
        "write_file · Write notes.txt in the workspace?"
    )


def turn_ended(page: Page, stop_reason: str) -> None:
    expect(page.locator(f"#timeline [data-kind=turn][data-stop={stop_reason}]")).to_be_visible()


def test_a_demo_session_streams_text_and_a_permission_answered_inline_shows_its_outcome(
    page: Page, server: Server
) -> None:
    start_demo(page)
    prompt(page, WRITE)
    expect(page.locator("#timeline [data-kind=text]").first).to_have_text(
        "textI'll write a note to notes.txt."
    )
    question(page)
    expect(page.locator("#timeline .countdown")).to_contain_text("s left")
    page.click("#timeline button[data-answer=allow]")
    expect(page.locator("#timeline [data-kind=question]")).to_contain_text("allowedby master")
    turn_ended(page, "end_turn")
    expect(page.locator("#timeline [data-kind=tool]")).to_contain_text("write_file ok")
    expect(page.locator("#timeline [data-kind=text]").last).to_contain_text(
        "Done. Wrote", use_inner_text=True
    )
    expect(page.locator("#timeline [data-kind=turn]")).to_have_text(
        re.compile(r"^turnend_turn\d+\.\d\d s · in \d+ / out 29 tokens$")
    )
    expect(page.locator("#timeline [data-kind=thinking]")).to_contain_text(
        "No model here, only a script."
    )
    expect(page.locator("#timeline [data-kind=tool]")).to_contain_text(
        re.compile(r"write_file ok\d+\.\d\d s · ")
    )
    assert (server.workspace / "notes.txt").read_text().startswith("You asked: " + WRITE)
    assert page.locator("#violation-count").text_content() == "0"
    screenshot(page, "timeline")
    page.fill("#search", "write_file")
    kinds = page.locator("#timeline .row-item")
    expect(kinds).to_have_count(2)
    assert [row.get_attribute("data-kind") for row in kinds.all()] == ["tool", "question"]


def test_the_start_form_is_built_from_the_adapters_settings_and_reaches_its_agent(
    page: Page, tmp_path: Path
) -> None:
    page.select_option("#adapter-select", label="process")
    fields = page.locator("#settings-fields")
    expect(fields.locator("[data-setting=env_policy] option")).to_have_text(
        ["(default)", "inherit", "allowlist"]
    )
    # An "agent" that prints its directory and environment and exits: the session
    # fails to start, with what it printed in the error.
    fields.locator("[data-setting=command]").fill('["sh", "-c", "pwd >&2; env >&2; exit 3"]')
    fields.locator("[data-setting=env_policy]").select_option(label="allowlist")
    fields.locator("[data-setting=env_allowlist]").fill('["PATH"]')
    page.fill("#workspace", str(tmp_path))
    click_start(page)
    expect(page.locator("#feed-status")).to_contain_text("session · ended")
    expect(page.locator("#timeline [data-kind=error]")).to_contain_text("SPAWN_FAILED")
    page.click("#tab-raw")
    page.select_option("#type-filter", label="agent.error")
    row = page.locator("#raw .row-item")
    expect(row).to_have_count(1)  # the filter is applied when the view is next drawn
    row.click()
    detail = page.locator("#detail").text_content() or ""
    printed = json.loads(detail.split("\n")[2])["payload"]["stderr_tail"].splitlines()
    assert printed[0] == str(tmp_path)
    assert any(line.startswith("PATH=") for line in printed)
    assert not any(line.startswith("HOME=") for line in printed)


def start_fake_rpc_agent(page: Page) -> None:
    """A session of the process adapter around the project's scripted RPC agent, whose
    ``DIALOG select`` and ``DIALOG input`` prompts ask a SELECT or an INPUT question."""
    page.select_option("#adapter-select", label="process")
    page.locator("#settings-fields [data-setting=command]").fill(json.dumps(fake_command()))
    click_start(page)
    expect(page.locator("#feed-status")).to_contain_text("session · live")
    expect(page.locator("#timeline [data-kind=session]")).to_be_visible()


def test_a_select_question_is_answered_inline_with_one_of_its_options(page: Page) -> None:
    start_fake_rpc_agent(page)
    prompt(page, "DIALOG select")
    asked = page.locator("#timeline [data-kind=question]")
    expect(asked).to_contain_text("A select?")
    asked.locator("button.answer", has_text="green").click()
    expect(asked).to_contain_text("allowedby master")
    expect(page.locator("#timeline [data-kind=text]").last).to_have_text('text{"value": "green"}')


def test_an_input_question_is_answered_inline_with_the_text_typed(page: Page) -> None:
    start_fake_rpc_agent(page)
    prompt(page, "DIALOG input")
    asked = page.locator("#timeline [data-kind=question]")
    expect(asked).to_contain_text("A input?")
    field = asked.locator("input")
    field.click()
    page.keyboard.type("Ad")
    # The window is resized while the user types: the rows are drawn again.
    before = field.element_handle()
    page.set_viewport_size({"width": 1200, "height": 700})
    page.wait_for_function("field => !field.isConnected", arg=before)
    page.keyboard.type("a")
    asked.locator("button.answer", has_text="Answer").click()
    expect(asked).to_contain_text("allowedby master")
    expect(page.locator("#timeline [data-kind=text]").last).to_have_text('text{"value": "Ada"}')


def test_a_permission_left_unanswered_times_out_when_its_countdown_runs_out(page: Page) -> None:
    start_demo(page, deadline_ms=1500)
    prompt(page, WRITE)
    question(page)
    expect(page.locator("#timeline [data-kind=question]")).to_contain_text("timed_outby deadline")
    turn_ended(page, "end_turn")
    expect(page.locator("#timeline [data-kind=tool]")).to_contain_text("write_file error")


@pytest.mark.parametrize(
    ("answer", "outcome"),
    [("deny", "deniedby master"), ("timeout", "timed_outby master_timeout")],
    ids=["denied inline", "time out now"],
)
def test_a_permission_denied_or_timed_out_from_the_page_shows_it_and_the_tool_fails(
    page: Page, answer: str, outcome: str
) -> None:
    start_demo(page)
    prompt(page, WRITE)
    question(page)
    page.click(f"#timeline button[data-answer={answer}]")
    expect(page.locator("#timeline [data-kind=question]")).to_contain_text(outcome)
    turn_ended(page, "end_turn")
    expect(page.locator("#timeline [data-kind=tool]")).to_contain_text("write_file error")


def test_a_press_on_allow_held_while_the_timeline_changes_still_answers(page: Page) -> None:
    start_demo(page)
    prompt(page, WRITE)
    question(page)
    asked = page.locator("#timeline [data-kind=question]")
    asked.locator("button[data-answer=allow]").hover()
    page.mouse.down()
    countdown = asked.locator(".countdown")
    expect(countdown).not_to_have_text(countdown.text_content() or "")
    # What else would draw the rows again meanwhile: a resize (or frames arriving).
    page.set_viewport_size({"width": 1200, "height": 700})
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    page.mouse.up()
    expect(asked).to_contain_text("allowedby master")


def test_abort_ends_the_running_turn_cancelled(page: Page) -> None:
    start_demo(page)
    prompt(page, WRITE)
    question(page)
    screenshot(page, "question")
    page.click("#abort")
    turn_ended(page, "cancelled")
    expect(page.locator("#timeline [data-kind=question]")).to_contain_text("cancelledby abort")
    assert page.locator("#violation-count").text_content() == "0"


def test_every_control_frame_a_master_sends_goes_from_the_page_to_the_session(
    page: Page,
) -> None:
    start_demo(page)
    page.fill("#prompt-text", "a steer")
    page.fill("#model", "some-model")
    page.fill("#plan", '["first", "second"]')
    for op in ("steer", "follow_up", "set_model", "list_models", "mode", "plan", "compact"):
        page.click(f"#controls button[data-op={op}]")
        expect(page.locator("#timeline [data-kind=master]").nth(-1)).to_be_visible()
    page.click("#end")
    expect(page.locator("#feed-status")).to_contain_text("session · ended")
    page.click("#tab-raw")
    page.select_option("#type-filter", label="control.plan.set")
    expect(page.locator("#raw [data-type='control.plan.set']")).to_contain_text('"first"')
    page.select_option("#type-filter", value="")
    sent = page.evaluate("[...document.querySelectorAll('#type-filter option')].map(o => o.value)")
    assert {
        "control.prompt.steer",
        "control.model.set",
        "control.model.list",
        "control.mode.switch",
        "control.plan.set",
        "control.session.compact",
        "control.session.end",
    } <= set(sent)
    # What the demo core cannot do, the session refuses as the contract says: no rule broken.
    assert page.locator("#violation-count").text_content() == "0"


def test_a_session_saved_as_a_recording_opens_and_replays_step_by_step_and_at_speed(
    page: Page, tmp_path: Path
) -> None:
    start_demo(page)
    prompt(page, WRITE)
    question(page)
    page.click("#timeline button[data-answer=allow]")
    turn_ended(page, "end_turn")
    page.click("#end")
    expect(page.locator("#feed-status")).to_contain_text("session · ended")
    with page.expect_download() as download:
        page.click("#save-recording")
    saved = tmp_path / "session.jsonl"
    download.value.save_as(saved)
    lines = saved.read_text().splitlines()
    assert json.loads(lines[0])["type"] == "session.capabilities"
    assert json.loads(lines[-1])["type"] == "session.closed"
    assert any(json.loads(line)["type"] == "control.interaction.response" for line in lines)

    page.set_input_files("#open-file", saved)
    status = page.locator("#feed-status")
    expect(status).to_have_text(f"recording · ended · {len(lines)} frames · 0 rules broken")
    page.click("#tab-raw")
    screenshot(page, "raw")
    page.select_option("#type-filter", label="control.interaction.response")
    (answered,) = [line for line in lines if "control.interaction.response" in line]
    row = page.locator("#raw .row-item")
    expect(row).to_have_count(1)
    timestamp = json.loads(answered)["timestamp"]
    expect(row).to_contain_text(f"#2{timestamp[11:23]}→ agentcontrol.interaction.response")
    row.click()
    assert (page.locator("#detail").text_content() or "").split("\n")[2] == answered
    page.select_option("#type-filter", value="")

    page.click("#replay-button")
    expect(status).to_have_text("replay · live · 0 frames · 0 rules broken")
    page.click("#replay-step")
    expect(status).to_have_text("replay · live · 1 frames · 0 rules broken")
    page.click("#replay-step")
    expect(status).to_have_text("replay · live · 2 frames · 0 rules broken")
    page.click("#replay-controls [data-speed=max]")
    expect(status).to_have_text(f"replay · ended · {len(lines)} frames · 0 rules broken")
    with page.expect_download() as download:
        page.click("#save-recording")
    replayed = tmp_path / "replayed.jsonl"
    download.value.save_as(replayed)
    assert replayed.read_text().splitlines() == lines


def test_a_broken_recording_shows_the_frame_that_breaks_a_rule(
    page: Page, tmp_path: Path, demo_lines: list[str]
) -> None:
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join(demo_lines[:4] + demo_lines[5:]) + "\n")
    page.set_input_files("#open-file", broken)
    expect(page.locator("#feed-status")).to_contain_text("recording · ended")
    expect(page.locator("#violations li")).to_have_text("[seq-contiguous] at #6: seq 6, expected 5")
    expect(page.locator("#timeline [data-kind=violation]")).to_contain_text("seq-contiguous")
    page.click("#violations li")
    marked = page.locator("#raw [data-violation]")
    expect(marked).to_have_attribute("data-violation", "seq-contiguous")
    expect(marked).to_contain_text("#6")
    expect(page.locator("#detail")).to_contain_text("✖ [seq-contiguous] seq 6, expected 5")
    screenshot(page, "violation")


def test_a_broken_recording_replayed_step_by_step_is_marked_at_the_frame_that_breaks_a_rule(
    page: Page, tmp_path: Path, demo_lines: list[str]
) -> None:
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join(demo_lines[:4] + demo_lines[5:]) + "\n")
    page.set_input_files("#open-file", broken)
    expect(page.locator("#feed-status")).to_contain_text("recording · ended")
    page.click("#replay-button")
    status = page.locator("#feed-status")
    for frames in range(1, 5):
        page.click("#replay-step")
        expect(status).to_have_text(f"replay · live · {frames} frames · 0 rules broken")
    page.click("#replay-step")
    expect(status).to_have_text("replay · live · 5 frames · 1 rules broken")
    expect(page.locator("#violations li")).to_have_text("[seq-contiguous] at #6: seq 6, expected 5")
    page.click("#tab-raw")
    expect(page.locator("#raw [data-violation]")).to_contain_text("#6")


def test_an_agent_that_prints_markup_shows_it_as_text_and_runs_none_of_it(page: Page) -> None:
    markup = '<script>window.pwned = 1</script><img src="x" onerror="window.pwned = 2">'
    start_demo(page)
    prompt(page, f"{markup} in notes.txt")
    question(page)
    page.click("#timeline button[data-answer=allow]")
    turn_ended(page, "end_turn")
    expect(page.locator("#timeline [data-kind=prompt]")).to_contain_text(markup)
    expect(page.locator("#timeline [data-kind=tool]")).to_contain_text("<script>window.pwned")
    page.locator("#timeline [data-kind=tool]").click()
    expect(page.locator("#detail")).to_contain_text(markup.replace('"', '\\"'))
    page.click("#tab-raw")
    page.select_option("#type-filter", label="control.prompt.request")
    expect(page.locator("#raw [data-type='control.prompt.request']")).to_contain_text("<script>")
    assert page.evaluate("window.pwned") is None
    assert page.locator("#views script, #views img").count() == 0


def test_a_recording_with_markup_in_its_name_and_lines_shows_it_as_text_everywhere(
    page: Page, tmp_path: Path, demo_lines: list[str]
) -> None:
    markup = '<img src="x" onerror="window.pwned = 3">'
    recording = tmp_path / f"{markup}.jsonl"
    junk_type = json.dumps({**json.loads(demo_lines[1]), "type": markup})
    recording.write_text("\n".join([demo_lines[0], markup, junk_type, *demo_lines[1:]]) + "\n")
    page.set_input_files("#open-file", recording)
    expect(page.locator("#feed-status")).to_contain_text("recording · ended")
    expect(page.locator("#feed-select option:checked")).to_contain_text(markup)
    expect(page.locator("#violations li").first).to_contain_text("[valid-frames]")
    page.click("#tab-raw")
    page.click("#follow")
    page.locator("#raw").evaluate("raw => raw.scrollTo(0, 0)")
    expect(page.locator("#raw .row-item").nth(1)).to_contain_text(markup)
    expect(page.locator("#raw .row-item").nth(2)).to_contain_text(markup)
    assert page.evaluate("window.pwned") is None
    assert page.locator("body img, body script:not([src])").count() == 0


def test_a_host_call_shows_its_duration_and_its_delegated_output_nested_under_it(
    page: Page, tmp_path: Path, demo_lines: list[str]
) -> None:
    recording = tmp_path / "delegated.jsonl"
    recording.write_text("\n".join(with_delegated_host_call(demo_lines)) + "\n")
    page.set_input_files("#open-file", recording)
    expect(page.locator("#feed-status")).to_contain_text("recording · ended")
    expect(page.locator("#feed-status")).to_contain_text("0 rules broken")
    host = page.locator("#timeline [data-kind=host]")
    expect(host).to_contain_text("host calldelegate ok")
    expect(host).to_contain_text('{"task":"say hi"} → done')
    delegated = page.locator("#timeline [data-kind=delegated]")
    expect(delegated).to_contain_text("delegated \u00d71sub-agent says hi")
    indent = "el => parseFloat(el.style.paddingLeft)"
    assert delegated.evaluate(indent) > host.evaluate(indent)
