"""The load generator's own HTTP/1.1 client: answers cut by Content-Length, however the bytes
arrive, and a failed answer failing its request rather than hanging it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

import pytest

from bench.loadgen import Client, HttpError

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Coroutine[Any, Any, None]]


async def read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    return await reader.readexactly(length)


@pytest.fixture
async def serve() -> AsyncIterator[Callable[[Handler], Coroutine[Any, Any, Client]]]:
    """Start a server with this handler; a client of it, closed (with the server) afterwards."""
    servers: list[asyncio.Server] = []
    clients: list[Client] = []

    async def start(handler: Handler) -> Client:
        server = await asyncio.start_server(handler, "127.0.0.1", 0)
        servers.append(server)
        port = server.sockets[0].getsockname()[1]
        clients.append(Client(f"http://127.0.0.1:{port}"))
        return clients[-1]

    yield start
    for client in clients:
        client.close()
    for server in servers:
        server.close()
        await server.wait_closed()


async def test_answers_split_anywhere_are_put_back_together(serve: Any) -> None:
    async def echo_in_pieces(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while not reader.at_eof():
            try:
                body = await read_request(reader)
            except asyncio.IncompleteReadError:
                break
            answer = b"HTTP/1.1 201 Created\r\nContent-Length: %d\r\nX: y\r\n\r\n%s" % (
                len(body),
                body,
            )
            for i in range(0, len(answer), 7):  # headers and body cut mid-line
                writer.write(answer[i : i + 7])
                await writer.drain()
                await asyncio.sleep(0)
        writer.close()

    client = await serve(echo_in_pieces)
    head = client.head("/api/v1/jobs")
    for n in range(3):  # one kept-alive connection, answer after answer
        assert await client.post(head, b'{"n":%d}' % n) == (201, b'{"n":%d}' % n)
    assert len(client.opened) == 1


async def test_two_answers_in_one_read_are_not_mixed_up(serve: Any) -> None:
    async def two_at_once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\naHTTP/1.1 409 Conflict\r\n")
        await read_request(reader)
        writer.write(b"Content-Length: 2\r\n\r\nbc")
        await writer.drain()

    client = await serve(two_at_once)
    head = client.head("/x")
    assert await client.post(head, b"1") == (200, b"a")
    assert await client.post(head, b"2") == (409, b"bc")


async def test_a_connection_the_server_closed_is_replaced(serve: Any) -> None:
    async def one_answer_per_connection(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()
        writer.close()

    client = await serve(one_answer_per_connection)
    head = client.head("/x")
    assert await client.post(head, b"1") == (201, b"ok")
    # whether the close is seen before the next request goes out or only after it
    for pause in (0.2, 0):
        await asyncio.sleep(pause)
        assert await client.post(head, b"2") == (201, b"ok")
    assert len(client.opened) == 3


async def test_an_answer_without_content_length_fails_the_request(serve: Any) -> None:
    async def chunked(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n")
        await writer.drain()

    client = await serve(chunked)
    with pytest.raises(HttpError, match="without Content-Length"):
        await client.post(client.head("/x"), b"{}")
    assert client.idle == []  # the connection is not reused


async def test_a_connection_closed_mid_answer_fails_the_request(serve: Any) -> None:
    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
        await writer.drain()
        writer.close()

    client = await serve(hang_up)
    with pytest.raises(HttpError, match="connection lost"):
        await asyncio.wait_for(client.post(client.head("/x"), b"{}"), 10)


async def test_no_server_is_an_http_error() -> None:
    probe = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = probe.sockets[0].getsockname()[1]
    probe.close()
    await probe.wait_closed()
    client = Client(f"http://127.0.0.1:{port}")
    with pytest.raises(HttpError, match="cannot connect"):
        await client.post(client.head("/x"), b"{}")


def test_only_loopback_is_contacted() -> None:
    with pytest.raises(SystemExit):
        Client("http://example.com:80")
