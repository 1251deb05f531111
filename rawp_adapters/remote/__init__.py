"""Sessions on a pool of workers over NATS JetStream (``pip install 'rawp-adapters[nats]'``).

A Master connects and opens sessions; workers (``rawp-adapters worker --nats URL``) take
them from a work queue while they have room::

    from rawp_adapters import AgentMetadata
    from rawp_adapters.remote import RemoteSessions

    remote = await RemoteSessions.connect("nats://127.0.0.1:4222")
    session = await remote.open(AgentMetadata(adapter_type="process", settings={...}))
    await session.send(session.control.prompt("hello"))
    async for frame in session:          # session.capabilities first,
        ...                              # session.closed last

    later = await remote.attach(session.session_id, from_seq=last_seq_seen)

Subjects, streams, headers and the lease bucket are in ``specs/remote.md``.
"""

from rawp_adapters.remote._link import Credentials
from rawp_adapters.remote._master import RemoteSession, RemoteSessions
from rawp_adapters.remote._names import START_REFUSED, WORKER_LOST, Names
from rawp_adapters.remote._worker import CREDENTIAL_PREFIX, Worker, WorkerSettings

__all__ = [
    "CREDENTIAL_PREFIX",
    "START_REFUSED",
    "WORKER_LOST",
    "Credentials",
    "Names",
    "RemoteSession",
    "RemoteSessions",
    "Worker",
    "WorkerSettings",
]
