"""Shared fixtures: every async test runs on asyncio and on trio."""

from __future__ import annotations

import logging

import pytest

from tests.support.long_first import long_first

pytest_plugins = ["pytester"]


@pytest.fixture(params=["asyncio", "trio"], scope="session")
def anyio_backend(request: pytest.FixtureRequest) -> str:
    backend: str = request.param
    return backend


@pytest.fixture(autouse=True)
def _quiet_library_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="rawp_adapters")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    long_first(config, items)
