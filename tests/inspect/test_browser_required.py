"""In CI the page's tests run in the browser or fail: they never skip."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.inspect import browser


def test_in_ci_a_missing_browser_fails_the_page_tests_instead_of_skipping_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(browser, "CHROMIUM", tmp_path / "chromium")
    monkeypatch.setenv(browser.REQUIRED, "1")
    with pytest.raises(pytest.fail.Exception, match="chromium is not installed"):
        next(browser.launch())


def test_outside_ci_a_missing_browser_skips_the_page_tests_saying_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(browser, "CHROMIUM", tmp_path / "chromium")
    monkeypatch.delenv(browser.REQUIRED, raising=False)
    with pytest.raises(pytest.skip.Exception, match="scripts/install-browser"):
        next(browser.launch())
