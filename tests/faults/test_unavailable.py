"""What a PostgreSQL that is starting up or shutting down answers must read as "database
unavailable" (back off, answer 503), never as a bug that crashes a worker's task.

The server here speaks just enough of the PostgreSQL protocol to refuse a connection the way a
real one does in the second after a restart (found by the PostgreSQL outage fault test, where
such a refusal crashed job tasks and left their leases to expire).
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncIterator
from uuid import uuid4

import pytest

from taskcrawler.domain import StorageUnavailable
from taskcrawler.storage import Database, WorkStore
from taskcrawler.storage.adapters import open_database

SSL_REQUEST = 80877103


def _error_response(sqlstate: str, message: str) -> bytes:
    fields = b"".join(
        code + value.encode() + b"\0"
        for code, value in ((b"S", "FATAL"), (b"V", "FATAL"), (b"C", sqlstate), (b"M", message))
    )
    body = fields + b"\0"
    return b"E" + struct.pack("!I", len(body) + 4) + body


async def _refusing_server(sqlstate: str, message: str) -> AsyncIterator[int]:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            length, code = struct.unpack("!II", await reader.readexactly(8))
            if code == SSL_REQUEST:
                writer.write(b"N")  # no TLS: the client goes on in plain text
                length, code = struct.unpack("!II", await reader.readexactly(8))
            await reader.readexactly(length - 8)  # the rest of the startup message
            writer.write(_error_response(sqlstate, message))
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    async with server:
        yield server.sockets[0].getsockname()[1]


@pytest.fixture(
    params=[
        ("57P03", "the database system is starting up"),
        ("57P01", "terminating connection due to administrator command"),
        ("53300", "sorry, too many clients already"),
    ],
    ids=["starting-up", "admin-shutdown", "too-many-clients"],
)
async def refusing_db(request: pytest.FixtureRequest) -> AsyncIterator[Database]:
    async for port in _refusing_server(*request.param):
        db = open_database(f"postgresql+asyncpg://postgres@127.0.0.1:{port}/tc")
        try:
            yield db
        finally:
            await db.close()


async def test_a_refusing_server_is_unavailable_not_a_crash(refusing_db: Database) -> None:
    with pytest.raises(StorageUnavailable):
        await refusing_db.ping()
    # A worker's writes see the same, so it backs off and keeps its jobs.
    with pytest.raises(StorageUnavailable):
        await WorkStore(refusing_db).renew_leases([uuid4()], lease_seconds=1)
