"""One NATS connection, in the asyncio event loop that nats-py needs.

nats-py is asyncio-only. On an asyncio host it runs in the host's own loop; on a trio
host it runs in an asyncio loop of its own thread, started with an anyio blocking
portal: host code crosses into it with :meth:`Link.call`, and what nats-py receives
crosses back with :meth:`Link.to_host`, queued in order without waiting for the host.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import ssl
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar
from urllib.parse import urlsplit, urlunsplit

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
import nats
import sniffio
from nats.aio.client import Client
from nats.errors import BadSubjectError, ConnectionClosedError, MaxPayloadError
from nats.errors import Error as NatsError
from nats.js import JetStreamContext
from nats.js.errors import APIError, ServiceUnavailableError

T = TypeVar("T")
CONNECT_TIMEOUT: Final = 10.0
"""Seconds to connect before giving up, by default."""
STORE_WITHIN: Final = 30.0
"""Seconds a message is published again until a server stores it (a cluster that lost
a server elects new stream leaders within seconds)."""
RETRY_WAIT: Final = 0.25
STORE_FAILED: Final = 10077
"""JetStream's error code for a message its stream refuses to store (a limit such as
``maximum messages per subject exceeded``): answered 503 like a cluster that is not
available yet, but no later try can change it."""


@dataclass(frozen=True, slots=True)
class Credentials:
    """How to authenticate to the NATS server; passed to nats-py as they are and never
    logged or published (``repr`` shows which are set, not their values)."""

    token: str | None = field(default=None, repr=False)
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    creds_file: str | None = None
    """A ``.creds`` file (JWT and nkey seed; needs ``pip install 'nats-py[nkeys]'``)."""
    nkey_seed_file: str | None = None
    tls_ca: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None

    def secrets(self, url: str) -> frozenset[str]:
        """What no agent may be given: the token, the passwords (those in ``url``'s
        servers too) and the paths of the files that hold keys."""
        in_urls = (urlsplit(server).password for server in server_urls(url))
        values = (self.token, self.password, *in_urls)
        files = (self.creds_file, self.nkey_seed_file, self.tls_key)
        return frozenset(value for value in (*values, *files) if value)

    def options(self) -> dict[str, Any]:
        """Keyword arguments for ``nats.connect``."""
        options: dict[str, Any] = {}
        if self.token is not None:
            options["token"] = self.token
        if self.user is not None:
            options["user"] = self.user
            options["password"] = self.password
        if self.creds_file is not None:
            options["user_credentials"] = self.creds_file
        if self.nkey_seed_file is not None:
            options["nkeys_seed"] = self.nkey_seed_file
        if self.tls_ca or self.tls_cert:
            context = ssl.create_default_context(cafile=self.tls_ca)
            if self.tls_cert is not None:
                context.load_cert_chain(self.tls_cert, self.tls_key)
            options["tls"] = context
        return options


def server_urls(url: str) -> list[str]:
    """The servers of ``url``: one URL, or several separated by commas as NATS tools
    take them (``nats://a:4222,nats://b:4222``); blanks around them are ignored."""
    servers = [server.strip() for server in url.split(",") if server.strip()]
    if not servers:
        raise ValueError(f"no NATS server URL in {url!r}")
    return servers


def redact(url: str) -> str:
    """``url`` (one server or several) without a user or password in it, for logs."""
    return ",".join(_redact_one(server) for server in server_urls(url))


def _redact_one(url: str) -> str:
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port is not None else host
    return urlunsplit(parts._replace(netloc=netloc))


class Link:
    """A connected nats-py client and its JetStream context. Use :func:`open_link`."""

    def __init__(self) -> None:
        self.nc: Client | None = None
        self._token = anyio.lowlevel.current_token()
        self._same_loop = sniffio.current_async_library() == "asyncio"
        self._cm: AbstractContextManager[anyio.from_thread.BlockingPortal] | None = None
        self._portal: anyio.from_thread.BlockingPortal | None = None

    @property
    def js(self) -> JetStreamContext:
        assert self.nc is not None
        return self.nc.jetstream(timeout=10)

    async def call(self, func: Callable[..., Awaitable[T]], *args: Any) -> T:
        """Run ``func(*args)`` in nats-py's loop and return what it returns."""
        if self._same_loop:
            return await func(*args)
        assert self._portal is not None
        future: concurrent.futures.Future[T] = self._portal.start_task_soon(func, *args)
        try:
            return await anyio.to_thread.run_sync(future.result, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            future.cancel()
            raise

    def to_host(self, func: Callable[[], object]) -> None:
        """From nats-py's loop: run ``func`` in the host's loop, after everything handed
        over before it; never waits for the host."""
        if self._same_loop:
            func()
            return
        native = self._token.native_token
        run_soon = getattr(native, "run_sync_soon", None) or native.call_soon_threadsafe  # type: ignore[attr-defined]
        with contextlib.suppress(RuntimeError):  # the host's loop has finished
            run_soon(func)

    async def _open(self, url: str, credentials: Credentials, name: str, bound: float) -> None:
        if not self._same_loop:

            def start() -> anyio.from_thread.BlockingPortal:
                self._cm = anyio.from_thread.start_blocking_portal("asyncio")
                return self._cm.__enter__()

            self._portal = await anyio.to_thread.run_sync(start)
        self.nc = await self.call(_connect, url, credentials, name, bound)

    async def aclose(self) -> None:
        with anyio.CancelScope(shield=True):
            nc, self.nc = self.nc, None
            if nc is not None and not nc.is_closed:
                with contextlib.suppress(Exception):
                    await self.call(nc.close)
            cm, self._cm = self._cm, None
            if cm is not None:
                await anyio.to_thread.run_sync(cm.__exit__, None, None, None)


async def publish_stored(
    js: JetStreamContext,
    subject: str,
    data: bytes,
    headers: dict[str, str],
    within: float = STORE_WITHIN,
) -> None:
    """JetStream-publish until the message is stored: a try that got no answer (the
    server connected to is lost, the stream is electing a leader) is made again, and
    its ``Nats-Msg-Id`` header (which ``headers`` must hold) makes the server drop a
    second copy. A refusal is raised at once; the last error after ``within`` seconds.
    Runs in nats-py's loop."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        try:
            await js.publish(subject, data, headers=headers)
            return
        except ServiceUnavailableError as exc:
            if exc.err_code == STORE_FAILED or loop.time() > deadline:
                raise
        except (APIError, ConnectionClosedError, MaxPayloadError, BadSubjectError):
            raise  # refused, or can never be sent: trying again cannot store it
        except NatsError:
            if loop.time() > deadline:
                raise
        await asyncio.sleep(RETRY_WAIT)


async def _connect(url: str, credentials: Credentials, name: str, bound: float) -> Client:
    """Connected to one of ``url``'s servers, or ``ConnectionError`` with the server's
    last word after ``bound`` seconds (nats-py itself retries forever, e.g. on refused
    credentials). Once connected, a lost connection is retried without end, on every
    server given and every one the cluster announces."""
    errors: list[Exception] = []

    async def record(error: Exception) -> None:
        errors.append(error)

    try:
        return await asyncio.wait_for(
            nats.connect(
                server_urls(url),
                name=name,
                allow_reconnect=True,
                max_reconnect_attempts=-1,
                reconnect_time_wait=0.25,
                connect_timeout=5,
                error_cb=record,
                **credentials.options(),
            ),
            bound,
        )
    except TimeoutError:
        raise ConnectionError(f"could not connect to {redact(url)}{_telling(errors)}") from None


def _telling(errors: list[Exception]) -> str:
    """The server's refusal of the credentials if it came (the connection reset that
    may follow it says less), else the last error."""
    refusals = [error for error in errors if "authorization" in str(error).lower()]
    told = refusals or errors
    return f": {told[-1]}" if told else ""


async def open_link(
    url: str,
    credentials: Credentials | None = None,
    *,
    name: str,
    connect_timeout: float = CONNECT_TIMEOUT,
) -> Link:
    link = Link()
    try:
        await link._open(url, credentials or Credentials(), name, connect_timeout)
    except BaseException:
        await link.aclose()
        raise
    return link
