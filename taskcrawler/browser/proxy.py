"""The only way out of a rendered page: a forward proxy behind the address guard.

Chromium resolves names and opens sockets itself, so vetting a URL before handing it to the
browser would leave a DNS-rebinding hole (the browser's own lookup can answer differently).
Instead each page's browser context is given this proxy (``--proxy-server`` per context, loopback
included) and chromium's own resolver maps every name to "not found": the browser never opens a
socket to the web, and this proxy, which resolves through the same :class:`GuardedResolver` and
creates its sockets through the same :meth:`AddressGuard.socket_factory` as our fetches, is the
one that connects, to the address it vetted.

What reaches it:

* ``CONNECT host:port`` for https, wss (and ws: chromium tunnels WebSockets through a proxy):
  the address is vetted, a socket opened to it, and the bytes relayed.
* ``GET http://host/path`` (absolute-form) for plain http: sent with the guarded aiohttp
  session of the renderer (no redirects followed: the browser sees them and asks again, so each
  hop is vetted), its body relayed still compressed.

Everything the page makes goes this way: documents, subresources, XHR/fetch, WebSockets,
redirects, workers, popups, preconnects. A refused destination answers ``403`` and is counted;
the page's bytes are counted against its budget, and past it its connections are cut.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Callable
from dataclasses import dataclass, field

import aiohttp
from aiohttp.abc import AbstractResolver
from yarl import URL

from taskcrawler.domain import ErrorCode, FetchError
from taskcrawler.fetch.fetcher import client_error
from taskcrawler.fetch.guard import AddressGuard, GuardedResolver, parse_ip_host
from taskcrawler.fetch.session import MAX_HEADERS, guarded_session
from taskcrawler.settings import Settings

#: A request head (line and headers) longer than this is refused: chromium never sends one.
MAX_HEAD_BYTES = 64 * 1024
#: A request body (a form post, an XHR upload) longer than this is refused.
MAX_REQUEST_BODY_BYTES = 8 * 1024 * 1024
RELAY_CHUNK_BYTES = 64 * 1024
#: Refused destinations remembered by name for the result; the count goes on past it.
MAX_BLOCKED_NAMES = 20
# Headers about one connection, not about the message (RFC 9110 7.6.1), plus the proxy's own.
_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
# The message is re-framed here, and aiohttp sets the host from the vetted URL.
_NOT_FORWARDED = _HOP_BY_HOP | {"content-length", "host"}
_NO_BODY_STATUSES = frozenset({204, 304})
# aiohttp would otherwise add its own values where chromium sent none.
_NO_AUTO_HEADERS = frozenset({"User-Agent", "Accept", "Accept-Encoding", "Content-Type"})


class OverBudget(Exception):
    """The page has downloaded all it may; its connections are cut."""


@dataclass
class PageTraffic:
    """What one page's network did, for the render result."""

    max_bytes: int
    requests: int = 0  # http requests and tunnels opened through the proxy
    blocked: int = 0  # refused by the address guard
    bytes_received: int = 0
    over_budget: bool = False
    blocked_names: list[str] = field(default_factory=list)
    #: The last failure per ``host:port``, to explain a main document that did not load.
    failures: dict[str, FetchError] = field(default_factory=dict)

    def received(self, count: int) -> None:
        """Count ``count`` bytes about to be relayed; OverBudget (nothing relayed) past it."""
        if self.over_budget or self.bytes_received + count > self.max_bytes:
            self.over_budget = True
            raise OverBudget
        self.bytes_received += count

    def refused(self, authority: str, error: FetchError) -> None:
        self.failures[authority] = error
        if error.code == ErrorCode.BLOCKED_ADDRESS:
            self.blocked += 1
            if len(self.blocked_names) < MAX_BLOCKED_NAMES:
                self.blocked_names.append(f"{authority} ({error.message})")


class Egress:
    """The network side, shared by every page of one renderer: guard, resolver and session.

    ``resolver`` is the inner DNS resolver (aiohttp's default; tests pass a fake one); when the
    guard is enabled it is wrapped in a :class:`GuardedResolver`, exactly as the fetcher's is.
    """

    def __init__(
        self,
        settings: Settings,
        guard: AddressGuard,
        resolver: AbstractResolver | None = None,
    ) -> None:
        self.settings = settings
        self.guard = guard
        self._inner = resolver
        self._resolver: AbstractResolver | None = None
        self._session: aiohttp.ClientSession | None = None

    def _resolver_or_new(self) -> AbstractResolver:
        if self._resolver is None:
            inner = self._inner or aiohttp.DefaultResolver()
            self._resolver = GuardedResolver(self.guard, inner) if self.guard.enabled else inner
        return self._resolver

    @property
    def session(self) -> aiohttp.ClientSession:
        """The plain-http session; created lazily because aiohttp needs a running loop."""
        if self._session is None:
            self._session = guarded_session(
                self.guard,
                limit=self.settings.browser_concurrency * 8,
                connect_timeout=self.settings.connect_timeout_seconds,
                headers={},
                resolver=self._inner,
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
        if self._resolver is not None and self._inner is None:
            await self._resolver.close()  # the default one is ours; a resolver passed in is not
        self._resolver = None

    async def connect(
        self, host: str, port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A TCP connection to ``host:port``, to an address the guard vetted; FetchError if not."""
        self.guard.check_host(host)
        deadline = self.settings.connect_timeout_seconds
        try:
            async with asyncio.timeout(deadline):
                addresses = await self._addresses(host, port)
        except FetchError:
            raise
        except TimeoutError:
            raise FetchError(
                ErrorCode.DNS, f"{host} did not resolve within {deadline:g} s"
            ) from None
        except OSError as exc:
            raise FetchError(ErrorCode.DNS, f"the host name did not resolve: {exc}") from None
        last: Exception | None = None
        for family, address in addresses:
            try:
                sock = await self._open_socket(family, address, port)
            except OSError as exc:
                last = exc
                continue
            return await asyncio.open_connection(sock=sock, limit=RELAY_CHUNK_BYTES)
        raise FetchError(ErrorCode.CONNECT, f"could not connect to {host}:{port}: {last}")

    async def _addresses(self, host: str, port: int) -> list[tuple[socket.AddressFamily, str]]:
        literal = parse_ip_host(host)
        if literal is not None:
            family = socket.AF_INET6 if literal.version == 6 else socket.AF_INET
            return [(family, str(literal))]
        results = await self._resolver_or_new().resolve(host, port, socket.AF_UNSPEC)
        return [(socket.AddressFamily(result["family"]), result["host"]) for result in results]

    async def _open_socket(
        self, family: socket.AddressFamily, address: str, port: int
    ) -> socket.socket:
        sockaddr: tuple[str, int] = (address, port)
        info = (family, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", sockaddr)
        if self.guard.enabled:
            sock = self.guard.socket_factory(info)  # the same last line as the fetcher's
        else:
            sock = socket.socket(family, socket.SOCK_STREAM)
            sock.setblocking(False)
        try:
            async with asyncio.timeout(self.settings.connect_timeout_seconds):
                await asyncio.get_running_loop().sock_connect(sock, sockaddr)
        except TimeoutError:
            sock.close()
            raise OSError(
                f"no connection within {self.settings.connect_timeout_seconds:g} s"
            ) from None
        except BaseException:
            sock.close()
            raise
        return sock


@dataclass(frozen=True, slots=True)
class _Request:
    method: str
    target: str
    version: str
    headers: list[tuple[str, str]]

    def header(self, name: str) -> str | None:
        for key, value in self.headers:
            if key.lower() == name:
                return value
        return None

    @property
    def keep_alive(self) -> bool:
        tokens = {t.strip().lower() for t in (self.header("proxy-connection") or "").split(",")}
        tokens |= {t.strip().lower() for t in (self.header("connection") or "").split(",")}
        if self.version == "HTTP/1.0":
            return "keep-alive" in tokens
        return "close" not in tokens


class _BadRequest(Exception):
    pass


def _parse_head(raw: bytes) -> _Request:
    try:
        text = raw.decode("latin-1")
    except UnicodeDecodeError:  # pragma: no cover - latin-1 decodes every byte
        raise _BadRequest("undecodable head") from None
    lines = text.split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise _BadRequest(f"bad request line {lines[0][:80]!r}")
    headers: list[tuple[str, str]] = []
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip():
            raise _BadRequest("bad header line")
        headers.append((name, value.strip()))
    if len(headers) > MAX_HEADERS:
        raise _BadRequest("too many headers")
    return _Request(parts[0].upper(), parts[1], parts[2], headers)


def _authority(target: str) -> tuple[str, int]:
    """``host:port`` of a CONNECT (``[v6]:port`` for IPv6)."""
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit() or not host or not 0 < int(port) < 65536:
        raise _BadRequest(f"bad CONNECT target {target[:80]!r}")
    return host.strip("[]").lower(), int(port)


def _status_for(error: FetchError) -> int:
    if error.code == ErrorCode.BLOCKED_ADDRESS:
        return 403
    if error.code == ErrorCode.TIMEOUT:
        return 504
    return 502


class PageProxy:
    """The proxy of one page: listens on a loopback port of its own while the page lives."""

    def __init__(self, egress: Egress, traffic: PageTraffic) -> None:
        self.egress = egress
        self.traffic = traffic
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> PageProxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, limit=MAX_HEAD_BYTES)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self

    async def close(self) -> None:
        """Stop listening and cut every connection (tunnels of a page that is gone included)."""
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.gather(*self._connections, return_exceptions=True)
        self._connections.clear()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # The connection's work runs in a task of its own, which close() cancels: cancelling
        # the task asyncio's server started would make it log the cancellation as an error.
        work = asyncio.ensure_future(self._connection(reader, writer))
        self._connections.add(work)
        try:
            await work
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise
        finally:
            self._connections.discard(work)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(
            OverBudget,
            _BadRequest,
            ConnectionError,
            asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,
            # The server broke off a body being relayed: the browser's copy ends there too,
            # when its connection closes, as if it had fetched the page itself.
            aiohttp.ClientError,
        ):
            while await self._exchange(reader, writer):
                pass

    async def _exchange(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Serve one request; True when the connection may carry another."""
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return False  # the browser closed an idle connection
        except asyncio.LimitOverrunError:
            await _answer(writer, 431, "request head too large")
            return False
        request = _parse_head(head)
        if self.traffic.over_budget:
            return False  # the page has had all it may download: nothing more goes out
        self.traffic.requests += 1
        if request.method == "CONNECT":
            await self._tunnel(request, reader, writer)
            return False
        return await self._forward(request, reader, writer)

    # --- CONNECT: https, wss, ws ------------------------------------------------------------

    async def _tunnel(
        self, request: _Request, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        host, port = _authority(request.target)
        authority = f"{host}:{port}"
        try:
            up_reader, up_writer = await self.egress.connect(host, port)
        except FetchError as error:
            self.traffic.refused(authority, error)
            await _answer(writer, _status_for(error), error.log_line)
            return
        upward = asyncio.create_task(_relay(reader, up_writer, None))
        downward = asyncio.create_task(_relay(up_reader, writer, self.traffic.received))
        try:
            writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            await writer.drain()
            # The browser may half-close its side first; the tunnel lasts until the server's
            # side ends (or the budget does: OverBudget goes up and cuts the connection).
            await downward
        except OSError:
            pass
        finally:
            for task in (upward, downward):
                task.cancel()
            await asyncio.gather(upward, downward, return_exceptions=True)
            up_writer.close()

    # --- absolute-form: plain http -----------------------------------------------------------

    async def _forward(
        self, request: _Request, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        url = URL(request.target)
        if url.scheme != "http" or not url.raw_host:
            await _answer(writer, 400, "only http:// URLs and CONNECT are proxied")
            return False
        body = await _read_body(request, reader)
        authority = f"{url.raw_host}:{url.port}"
        headers = [
            (name, _as_sent(value))
            for name, value in request.headers
            if name.lower() not in _NOT_FORWARDED
        ]
        try:
            self.egress.guard.check_host(url.raw_host)
            async with asyncio.timeout(self.egress.settings.fetch_timeout_seconds):
                response = await self.egress.session.request(
                    request.method,
                    url,
                    headers=headers,
                    data=body or None,
                    allow_redirects=False,
                    auto_decompress=False,
                    skip_auto_headers=_NO_AUTO_HEADERS,
                )
        except FetchError as refused:
            return await self._refuse(writer, authority, refused, request)
        except TimeoutError:
            late = FetchError(ErrorCode.TIMEOUT, f"no answer from {authority} in time")
            return await self._refuse(writer, authority, late, request)
        except aiohttp.ClientError as exc:
            return await self._refuse(writer, authority, client_error(exc), request)
        async with response:
            await self._relay_response(request, response, writer)
        return request.keep_alive

    async def _refuse(
        self, writer: asyncio.StreamWriter, authority: str, error: FetchError, request: _Request
    ) -> bool:
        self.traffic.refused(authority, error)
        await _answer(writer, _status_for(error), error.log_line, keep_alive=request.keep_alive)
        return request.keep_alive

    async def _relay_response(
        self, request: _Request, response: aiohttp.ClientResponse, writer: asyncio.StreamWriter
    ) -> None:
        lines = [f"HTTP/1.1 {response.status} {_wire_reason(response)}".rstrip()]
        for raw_name, raw_value in response.raw_headers:
            name = raw_name.decode("latin-1")
            if name.lower() not in _HOP_BY_HOP:
                lines.append(f"{name}: {raw_value.decode('latin-1')}")
        has_body = request.method != "HEAD" and response.status not in _NO_BODY_STATUSES
        length = response.headers.get("Content-Length")
        chunked = has_body and (length is None or "Transfer-Encoding" in response.headers)
        if chunked:
            lines = [line for line in lines if not line.lower().startswith("content-length:")]
            lines.append("Transfer-Encoding: chunked")
        if not request.keep_alive:
            lines.append("Connection: close")
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        if not has_body:
            await writer.drain()
            return
        async for chunk in response.content.iter_chunked(RELAY_CHUNK_BYTES):
            self.traffic.received(len(chunk))
            writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk) if chunked else chunk)
            await writer.drain()
        if chunked:
            writer.write(b"0\r\n\r\n")
        await writer.drain()


def _as_sent(value: str) -> str:
    """A header value read as Latin-1 (a character a byte), as aiohttp, which writes headers as
    UTF-8, sends the same bytes: a UTF-8 cookie would otherwise be encoded twice. Bytes that
    are not UTF-8 cannot pass through it unchanged; they go as their Latin-1 characters."""
    try:
        return value.encode("latin-1").decode("utf-8")
    except UnicodeDecodeError:
        return value


def _wire_reason(response: aiohttp.ClientResponse) -> str:
    """The reason phrase as the head is written (Latin-1, a character a byte), holding the
    bytes the server sent: aiohttp decoded them as UTF-8, escaping what is not."""
    return (response.reason or "").encode("utf-8", "surrogateescape").decode("latin-1")


async def _read_body(request: _Request, reader: asyncio.StreamReader) -> bytes:
    """The request body, by Content-Length or chunked, within MAX_REQUEST_BODY_BYTES."""
    encoding = (request.header("transfer-encoding") or "").lower()
    length = request.header("content-length")
    if encoding and length is not None:
        raise _BadRequest("both Content-Length and Transfer-Encoding")  # a smuggling shape
    if encoding:
        if encoding != "chunked":
            raise _BadRequest(f"transfer-encoding {encoding!r}")
        return await _read_chunked(reader)
    if length is None:
        return b""
    if not length.isdigit() or int(length) > MAX_REQUEST_BODY_BYTES:
        raise _BadRequest("bad or too large Content-Length")
    return await reader.readexactly(int(length))


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    body = bytearray()
    while True:
        size_line = (await reader.readuntil(b"\r\n")).split(b";", 1)[0].strip()
        try:
            size = int(size_line, 16)
        except ValueError:
            raise _BadRequest("bad chunk size") from None
        if size == 0:
            while (await reader.readuntil(b"\r\n")) != b"\r\n":
                pass  # trailers, dropped
            return bytes(body)
        if len(body) + size > MAX_REQUEST_BODY_BYTES:
            raise _BadRequest("request body too large")
        body += await reader.readexactly(size)
        await reader.readexactly(2)


async def _relay(
    source: asyncio.StreamReader,
    sink: asyncio.StreamWriter,
    count: Callable[[int], None] | None,
) -> None:
    """Copy until end of stream, then half-close the other side."""
    while data := await source.read(RELAY_CHUNK_BYTES):
        if count is not None:
            count(len(data))
        sink.write(data)
        await sink.drain()
    if sink.can_write_eof():
        with contextlib.suppress(OSError):
            sink.write_eof()


async def _answer(
    writer: asyncio.StreamWriter, status: int, message: str, *, keep_alive: bool = False
) -> None:
    """A short response of the proxy's own (the page sees it as the server's answer)."""
    body = f"TaskCrawler refused this request: {message}\n".encode()
    head = (
        f"HTTP/1.1 {status} Refused\r\n"
        "Content-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\n"
        f"X-TaskCrawler-Refused: {message.split(':', 1)[0]}\r\n"
        f"Connection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n"
    )
    writer.write(head.encode("latin-1") + body)
    await writer.drain()


__all__ = ["Egress", "OverBudget", "PageProxy", "PageTraffic"]
