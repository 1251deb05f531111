"""A NATS server for the remote tests; each test gets a prefix of its own (its own
streams and lease bucket), so tests share the server and nothing else."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.remote.cluster import NatsServer, nats_server


@pytest.fixture(scope="package")  # gone before other packages' tests count child processes
def nats(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServer]:
    with nats_server(tmp_path_factory.mktemp("nats")) as server:
        yield server


@pytest.fixture
def prefix() -> str:
    return f"t{uuid.uuid4().hex[:10]}"
