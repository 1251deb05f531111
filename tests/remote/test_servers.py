"""Several server URLs, as NATS tools take them: one string, separated by commas."""

from __future__ import annotations

import pytest

from rawp_adapters.remote import Credentials
from rawp_adapters.remote._link import redact, server_urls

CLUSTER = "nats://127.0.0.1:4222, nats://ann:pw-a@127.0.0.2:4222,tls://bob:pw-b@h3:4222"


def test_a_comma_separated_url_is_each_of_its_servers() -> None:
    assert server_urls(CLUSTER) == [
        "nats://127.0.0.1:4222",
        "nats://ann:pw-a@127.0.0.2:4222",
        "tls://bob:pw-b@h3:4222",
    ]
    assert server_urls("nats://h:4222") == ["nats://h:4222"]


def test_a_url_naming_no_server_is_refused() -> None:
    with pytest.raises(ValueError, match="no NATS server URL"):
        server_urls(" , ")


def test_each_server_is_logged_without_its_user_or_password() -> None:
    assert redact(CLUSTER) == "nats://127.0.0.1:4222,nats://127.0.0.2:4222,tls://h3:4222"


def test_the_password_of_every_server_is_withheld_from_agents() -> None:
    assert Credentials(token="t").secrets(CLUSTER) == {"t", "pw-a", "pw-b"}
