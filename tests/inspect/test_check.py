"""``rawp-adapters inspect --check FILE``: recordings as CI fixtures."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.inspect.recordings import CLI


def check(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "inspect", "--check", str(path)], capture_output=True, text=True, timeout=60
    )


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


def test_a_recording_that_keeps_every_rule_passes(tmp_path: Path, demo_lines: list[str]) -> None:
    done = check(write(tmp_path / "good.jsonl", demo_lines))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{len(demo_lines)} frames, every rule kept" in done.stdout


def test_a_frame_missing_from_the_middle_fails_naming_the_rule_and_line(
    tmp_path: Path, demo_lines: list[str]
) -> None:
    path = write(tmp_path / "gap.jsonl", demo_lines[:4] + demo_lines[5:])
    done = check(path)
    assert done.returncode == 1
    assert f"{path}:5: [seq-contiguous] seq 6, expected 5" in done.stdout
    assert done.stdout.rstrip().endswith("breaks seq-contiguous")


def test_a_recording_cut_before_the_session_closed_fails(
    tmp_path: Path, demo_lines: list[str]
) -> None:
    assert json.loads(demo_lines[-1])["type"] == "session.closed"
    done = check(write(tmp_path / "cut.jsonl", demo_lines[:-1]))
    assert done.returncode == 1
    assert "[closed-last] the stream does not end with session.closed" in done.stdout


def test_a_line_that_is_no_frame_fails_as_an_invalid_frame(
    tmp_path: Path, demo_lines: list[str]
) -> None:
    done = check(write(tmp_path / "junk.jsonl", [*demo_lines[:3], "<html>", *demo_lines[3:]]))
    assert done.returncode == 1
    assert ":4: [valid-frames]" in done.stdout


def test_a_file_that_cannot_be_read_is_a_usage_error(tmp_path: Path) -> None:
    done = check(tmp_path / "absent.jsonl")
    assert done.returncode == 2
    assert "cannot read" in done.stderr
