"""Credentials pass through to the server and stay out of frames and logs; tenants are
kept apart by their prefix and by the server's accounts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from nats.errors import AuthorizationError

from rawp_adapters import AgentMetadata
from rawp_adapters.frames import SessionCapabilitiesFrame
from rawp_adapters.remote import Credentials, RemoteSessions
from rawp_adapters.remote._link import _telling
from tests.remote.cluster import NatsServer, fake_agent, nats_server, running_worker
from tests.remote.masters import driving

pytestmark = pytest.mark.anyio

SECRET = "s3cret-of-acme"
OTHER_SECRET = "deploy-key-of-acme"
QUIET = 1.0
"""Seconds a check that nothing arrives waits."""


def accounts(store: Path) -> str:
    """A server config with two accounts (tenants), each with JetStream of its own."""
    config = store.parent / "accounts.conf"
    config.write_text(
        "accounts {\n"
        f'  ACME {{ jetstream: enabled, users: [{{user: acme, password: "{SECRET}"}}] }}\n'
        '  ZETA { jetstream: enabled, users: [{user: zeta, password: "zeta-secret"}] }\n'
        "}\n"
    )
    return str(config)


async def test_credentials_pass_through_and_no_secret_reaches_frames_or_logs(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store"
    with nats_server(store, "-c", accounts(store)) as server:
        acme = Credentials(user="acme", password=SECRET)
        with pytest.raises(ConnectionError, match=r"(?i)authorization"):
            await RemoteSessions.connect(server.url, connect_timeout=2)
        async with (
            running_worker(
                server.url, "rawp", "--user", "acme", env={"NATS_PASSWORD": SECRET}
            ) as worker,
            await RemoteSessions.connect(server.url, credentials=acme) as remote,
        ):
            session = await remote.open(fake_agent(), workspace=str(tmp_path))
            async with driving(session) as d:
                await d.prompt("TOOL echo hi")
                await d.end()
    assert SECRET not in repr(acme)
    assert not any(SECRET in frame.model_dump_json() for frame in d.frames)
    assert not worker.logged(SECRET)


async def test_a_tenant_cannot_read_or_drive_another_tenants_session(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with nats_server(store, "-c", accounts(store)) as server:
        acme = Credentials(user="acme", password=SECRET)
        zeta = Credentials(user="zeta", password="zeta-secret")
        async with (
            running_worker(server.url, "rawp", "--user", "acme", env={"NATS_PASSWORD": SECRET}),
            await RemoteSessions.connect(server.url, credentials=acme) as own,
            await RemoteSessions.connect(server.url, credentials=zeta) as other,
        ):
            session = await own.open(fake_agent(), workspace=str(tmp_path))
            async with driving(session) as d:
                await d.wait_for(SessionCapabilitiesFrame)
                intruder = await other.attach(session.session_id)
                await intruder.send(intruder.control.prompt("Say hello."))
                with anyio.move_on_after(QUIET):
                    stolen = await intruder.receive()
                    pytest.fail(f"another tenant read {stolen.type}")
                turn = await d.prompt("Say hello.")
                await d.end()
    assert [f.type for f in d.of_type("session.turn.start")] == ["session.turn.start"]
    assert turn.text == "echo: Say hello."


async def test_sessions_under_one_prefix_are_not_taken_by_workers_of_another(
    nats: NatsServer, prefix: str, tmp_path: Path
) -> None:
    async with (
        running_worker(nats.url, f"{prefix}.acme"),
        await RemoteSessions.connect(nats.url, prefix=f"{prefix}.zeta") as zeta,
        await RemoteSessions.connect(nats.url, prefix=f"{prefix}.acme") as acme,
    ):
        waiting = await zeta.open(fake_agent(), workspace=str(tmp_path))
        started = await acme.open(fake_agent(), workspace=str(tmp_path))
        async with driving(started) as d:
            await d.prompt("Say hello.")
            with anyio.move_on_after(QUIET):
                frame = await waiting.receive()
                pytest.fail(f"a worker of another prefix started it: {frame.type}")
            await d.end()


async def test_no_agent_of_a_worker_sees_its_credentials_and_only_an_allowlist_by_default(
    nats: NatsServer, prefix: str, tmp_path: Path
) -> None:
    worker_env = {
        "NATS_PASSWORD": SECRET,
        "NATS_URL": f"nats://acme:{SECRET}@127.0.0.1:4222",
        "FAKE_COPY_OF_PASSWORD": SECRET,
        "FAKE_BROKER_URL": f"nats://acme:{SECRET}@broker:4222",
        "FAKE_DEPLOY_KEY": OTHER_SECRET,
    }
    in_process = AgentMetadata(
        adapter_type="sdk", settings={"core": "tests.remote.env_core:env_core"}
    )
    inherit = fake_agent(env_policy="inherit", env={"FAKE_NAMED": "given"})
    async with (
        running_worker(nats.url, prefix, "--allow-import-path", env=worker_env),
        await RemoteSessions.connect(nats.url, prefix=prefix) as remote,
    ):
        seen = {}
        for name, metadata in [("default", fake_agent()), ("inherit", inherit)]:
            session = await remote.open(metadata, workspace=str(tmp_path))
            async with driving(session) as d:
                seen[name] = json.loads((await d.prompt("ENV")).text)["env"]
                await d.end()
        session = await remote.open(in_process, workspace=str(tmp_path))
        async with driving(session) as d:
            core_env = (await d.prompt("env")).text
            await d.end()
    for env in seen.values():
        assert not [name for name in env if name.startswith("NATS_")]
        assert SECRET not in json.dumps(env)
        assert {"PATH", "HOME"} <= env.keys()
    assert OTHER_SECRET not in json.dumps(seen["default"])
    assert seen["inherit"]["FAKE_DEPLOY_KEY"] == OTHER_SECRET
    assert seen["inherit"]["FAKE_NAMED"] == "given"
    core_names = [line.partition("=")[0] for line in core_env.splitlines()]
    assert "PATH" in core_names
    assert not [name for name in core_names if name.startswith("NATS_")]
    assert SECRET not in core_env


@pytest.mark.parametrize(
    "url",
    [f"nats://acme:{SECRET}@127.0.0.1:9", f"nats://127.0.0.1:9,nats://acme:{SECRET}@127.0.0.2:9"],
    ids=["one server", "the second of a cluster's"],
)
def test_a_worker_refuses_a_password_on_its_command_line_where_every_process_can_read_it(
    url: str,
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "rawp_adapters.cli", "worker", "--nats", url],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "NATS_PASSWORD" in done.stderr
    assert SECRET not in done.stderr


def test_a_refused_password_is_what_the_connection_error_names_even_if_a_reset_came_last() -> None:
    errors: list[Exception] = [
        ConnectionResetError(104, "Connection reset by peer"),
        AuthorizationError(),
        ConnectionResetError(104, "Connection reset by peer"),
    ]
    assert _telling(errors) == ": nats: authorization failed"
    assert _telling(errors[:1]) == ": [Errno 104] Connection reset by peer"
    assert _telling([]) == ""
