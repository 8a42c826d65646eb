"""Every hostile input we try against the fetcher, and what happened: a test and a report.

As a test, each row must end with the expected code (and, for a refused address, with no request
reaching any local server). As a report::

    .venv/bin/python -m tests.integration.test_fetch_hostile

prints the table. Everything runs against servers on 127.0.0.1 / 127.0.0.2; nothing leaves the
machine, and the addresses the guard refuses are never connected to.
"""

from __future__ import annotations

import asyncio
import ipaddress
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import quote

import pytest

from taskcrawler.domain import ErrorCode, FetchError
from taskcrawler.fetch import Fetcher
from taskcrawler.fetch.guard import AddressGuard
from tests.support.hostile import (
    HostileServer,
    RawServer,
    StaticResolver,
    fetch_settings,
    gzip_bomb,
)

OK = "ok"
#: Past a fetch's deadline, what a loaded machine may take to end it: well under the 30 s the
#: holding routes hold.
SCHEDULING_SLACK_SECONDS = 5.0
BLOCKED = ErrorCode.BLOCKED_ADDRESS.value
#: The deadline of a case that must end in some other way: a loaded machine's stalled loop
#: (2.5 s measured) must not turn it into a timeout; with the slack it stays short of the 30 s
#: the holding routes hold, so the time check still catches a fetch outliving its deadline.
LIMITS: dict[str, Any] = {
    "allow_private_networks": True,
    "fetch_timeout_seconds": 10.0,
    "max_body_bytes": 1024 * 1024,
    "max_redirects": 5,
}
#: The deadline of a case that must time out: short, as the test waits it out.
TIMEOUT_SECONDS = 1.0
RESOLVER = {
    "localhost": ["127.0.0.1", "::1"],  # as /etc/hosts has it
    "public.test": ["127.0.0.1"],
    "intranet.test": ["127.0.0.2"],
    "evil-dns.test": ["127.0.0.1"],
    "mixed-dns.test": ["8.8.8.8", "127.0.0.1"],
    "metadata.test": ["169.254.169.254"],
}


@dataclass(frozen=True)
class Case:
    name: str
    url: str  # a template: {port} public server, {iport} intranet server, {raw} raw server
    expect: str
    settings: dict[str, Any] = field(default_factory=dict)
    pretend_public: bool = False  # 127.0.0.1 counts as a public address (for redirect tests)
    robots: str | None = None  # robots.txt the public server serves ("bomb": a gzip bomb)

    def with_robots(self, robots: str) -> Case:
        return replace(self, robots=robots)


def _address(name: str, host: str) -> Case:
    """An address form that must be refused before any packet leaves."""
    return Case(name, f"http://{host}:{{port}}/page", BLOCKED)


def _limit(name: str, path: str, expect: str, **settings: Any) -> Case:
    deadline = TIMEOUT_SECONDS if expect == ErrorCode.TIMEOUT else LIMITS["fetch_timeout_seconds"]
    limits = {**LIMITS, "fetch_timeout_seconds": deadline, **settings}
    return Case(name, f"http://127.0.0.1:{{port}}{path}", expect, limits)


def _hop(target: str) -> str:
    # Braces stay unescaped: they are template fields, filled in when the case runs.
    return "/redirect-to?url=" + quote(target, safe="{}")


CASES = [
    # --- address forms, guard on ---------------------------------------------------------
    _address("loopback, dotted quad", "127.0.0.1"),
    _address("loopback, short form a.b", "127.1"),
    _address("loopback, short form a.b.c", "127.0.1"),
    _address("loopback, decimal", "2130706433"),
    _address("loopback, hex", "0x7f000001"),
    _address("loopback, octal dotted", "0177.0.0.1"),
    _address("loopback, octal whole", "017700000001"),
    _address("loopback, hex short", "0x7f.1"),
    _address("loopback, zero-padded", "127.000.000.001"),
    _address("loopback, trailing dot", "127.0.0.1."),
    _address("loopback, unicode digits", "①②⑦.0.0.1"),
    _address("loopback, ideographic dots", "127。0。0。1"),
    _address("loopback, name localhost", "localhost"),
    _address("loopback IPv6", "[::1]"),
    _address("IPv4-mapped IPv6", "[::ffff:127.0.0.1]"),
    _address("IPv4-mapped IPv6, hex", "[::ffff:7f00:1]"),
    _address("NAT64 of loopback", "[64:ff9b::7f00:1]"),
    _address("6to4 of loopback", "[2002:7f00:1::]"),
    _address("unspecified 0.0.0.0", "0.0.0.0"),
    _address("unspecified, short 0", "0"),
    _address("cloud metadata", "169.254.169.254"),
    _address("cloud metadata, decimal", "2852039166"),
    _address("private 10/8", "10.0.0.1"),
    _address("private 192.168/16", "192.168.0.1"),
    _address("CGNAT 100.64/10", "100.64.0.1"),
    _address("multicast", "224.0.0.1"),
    _address("link-local IPv6", "[fe80::1]"),
    _address("unique-local IPv6", "[fd00::1]"),
    _address("DNS name -> loopback", "evil-dns.test"),
    _address("DNS name -> public + loopback", "mixed-dns.test"),
    _address("DNS name -> metadata", "metadata.test"),
    Case(
        "redirect public -> intranet name",
        "http://public.test:{port}" + _hop("http://intranet.test:{iport}/secret"),
        BLOCKED,
        pretend_public=True,
    ),
    Case(
        "redirect public -> intranet literal",
        "http://public.test:{port}" + _hop("http://127.0.0.2:{iport}/secret"),
        BLOCKED,
        pretend_public=True,
    ),
    Case(
        "redirect public -> decimal intranet",
        "http://public.test:{port}" + _hop("http://2130706434:{iport}/secret"),
        BLOCKED,
        pretend_public=True,
    ),
    Case("control: allow_private_networks", "http://127.0.0.1:{port}/page", OK, LIMITS),
    # --- limits ---------------------------------------------------------------------------
    _limit("slow drip body, 1 byte / 0.2 s", "/drip", ErrorCode.TIMEOUT),
    _limit("headers never come", "/slow-headers", ErrorCode.TIMEOUT),
    _limit("2 MB body, Content-Length", "/big", ErrorCode.TOO_LARGE),
    _limit("4 MB chunked body", "/big-chunked", ErrorCode.TOO_LARGE),
    _limit("gzip bomb, 50 MB inflated", "/gzip-bomb", ErrorCode.TOO_LARGE),
    _limit("corrupt gzip", "/bad-gzip", ErrorCode.BAD_RESPONSE),
    _limit("control: 5 redirects", "/chain/5", OK),
    _limit("6 redirects", "/chain/6", ErrorCode.TOO_MANY_REDIRECTS),
    _limit("redirect loop a -> b -> a", "/loop/a", ErrorCode.REDIRECT_LOOP),
    _limit("redirect to file:///etc/passwd", _hop("file:///etc/passwd"), ErrorCode.INVALID_URL),
    _limit(
        "redirect with credentials",
        _hop("http://user:pw@127.0.0.1:{port}/page"),
        ErrorCode.INVALID_URL,
    ),
    _limit("image/png, endless body", "/type/image/png", ErrorCode.UNSUPPORTED_CONTENT_TYPE),
    _limit(
        "octet-stream, endless body",
        "/type/application/octet-stream",
        ErrorCode.UNSUPPORTED_CONTENT_TYPE,
    ),
    _limit("100 KB header line", "/huge-header", ErrorCode.BAD_RESPONSE),
    _limit("500 headers", "/many-headers", ErrorCode.BAD_RESPONSE),
    _limit("404", "/status/404", "http_404"),
    _limit("410", "/status/410", "http_410"),
    _limit("429 Retry-After: 7", "/status/429?retry_after=7", ErrorCode.HTTP_429),
    _limit(
        "503 Retry-After: HTTP-date",
        "/status/503?retry_after=" + quote("Wed, 21 Oct 2099 07:28:00 GMT"),
        ErrorCode.HTTP_5XX,
    ),
    _limit("500", "/status/500", ErrorCode.HTTP_5XX),
    _limit("connection closed before response", "/disconnect", ErrorCode.CONNECTION_CLOSED),
    _limit("body cut short", "/truncated", ErrorCode.CONNECTION_CLOSED),
    _limit(
        "robots.txt disallows the page",
        "/page/private",
        ErrorCode.ROBOTS_DISALLOWED,
        respect_robots=True,
    ).with_robots("User-agent: *\nDisallow: /page/private\n"),
    _limit(
        "robots.txt disallows a redirect hop",
        _hop("/page/private"),
        ErrorCode.ROBOTS_DISALLOWED,
        respect_robots=True,
    ).with_robots("User-agent: *\nDisallow: /page/private\n"),
    _limit("robots.txt is a gzip bomb", "/page", OK, respect_robots=True).with_robots("bomb"),
    Case("malformed status line", "http://127.0.0.1:{raw}/", ErrorCode.BAD_RESPONSE, LIMITS),
    Case("nothing listening", "http://127.0.0.1:1/", ErrorCode.CONNECT, LIMITS),
    Case("name does not resolve", "http://nxdomain.test:{port}/", ErrorCode.DNS, LIMITS),
]


@dataclass
class Row:
    case: Case
    url: str
    outcome: str
    message: str
    local_hits: int
    seconds: float
    transient: bool | None
    retry_after: float | None

    @property
    def passed(self) -> bool:
        refused_quietly = self.case.expect != BLOCKED or self.local_hits == 0
        return self.outcome == self.case.expect and refused_quietly


@dataclass
class Servers:
    public: HostileServer
    intranet: HostileServer
    raw: RawServer

    def hits(self) -> int:
        return self.public.total_hits + self.intranet.total_hits + self.raw.hits


async def start_servers() -> Servers:
    # The bomb is compressed once per process; built here, its CPU time is not counted
    # against the deadline of the fetch that first asks for it.
    await asyncio.to_thread(gzip_bomb)
    return Servers(
        public=await HostileServer("127.0.0.1").start(),
        intranet=await HostileServer("127.0.0.2").start(),
        raw=await RawServer(b"HTTP/1.1 banana\r\n\r\n").start(),
    )


async def stop_servers(servers: Servers) -> None:
    await servers.public.stop()
    await servers.intranet.stop()
    await servers.raw.stop()


def _fetcher(case: Case) -> Fetcher:
    guard = None
    if case.pretend_public:
        public = ipaddress.ip_address("127.0.0.1")
        guard = AddressGuard(allow=lambda ip: ip == public)
    settings = fetch_settings(**case.settings)
    return Fetcher(settings, guard=guard, resolver=StaticResolver(RESOLVER))


async def run_case(case: Case, servers: Servers) -> Row:
    url = case.url.format(
        port=servers.public.port, iport=servers.intranet.port, raw=servers.raw.port
    )
    fetcher = _fetcher(case)
    servers.public.robots_status = 200 if case.robots else 404
    servers.public.robots_body = case.robots or ""
    servers.public.robots_bomb = case.robots == "bomb"

    # For a redirect from the pretend-public server, only the intranet must stay untouched.
    def counted() -> int:
        return servers.intranet.total_hits if case.pretend_public else servers.hits()

    before = counted()
    started = time.perf_counter()
    try:
        page = await fetcher.fetch(url)
        outcome, message, transient, retry_after = OK, f"HTTP {page.status}", None, None
    except FetchError as exc:
        outcome, message = exc.code, exc.message
        transient, retry_after = exc.transient, exc.retry_after
    finally:
        await fetcher.close()
    seconds = time.perf_counter() - started
    hits = counted() - before
    return Row(case, url, outcome, message, hits, seconds, transient, retry_after)


async def run_all() -> list[Row]:
    servers = await start_servers()
    try:
        return [await run_case(case, servers) for case in CASES]
    finally:
        await stop_servers(servers)


def format_table(rows: list[Row]) -> Iterator[str]:
    yield f"{'#':>2}  {'hostile input':34} {'expected':25} {'outcome':25} {'hits':>4} {'secs':>5}"
    yield "-" * 100
    for index, row in enumerate(rows, 1):
        mark = "" if row.passed else "  <-- UNEXPECTED"
        yield (
            f"{index:>2}  {row.case.name[:34]:34} {row.case.expect:25} {row.outcome:25} "
            f"{row.local_hits:>4} {row.seconds:5.2f}{mark}"
        )
        extra = f"transient={row.transient}" if row.transient is not None else ""
        if row.retry_after is not None:
            extra += f" retry_after={row.retry_after:.0f}s"
        yield f"    {row.url[:70]}  {extra}"
        yield f"    -> {row.message[:92]}"
    passed = sum(row.passed for row in rows)
    yield "-" * 100
    yield f"{passed}/{len(rows)} as expected"
    yield "hits: requests that reached a local server (for the redirect rows: the intranet one)"


def main() -> None:
    rows = asyncio.run(run_all())
    for line in format_table(rows):
        print(line)
    raise SystemExit(0 if all(row.passed for row in rows) else 1)


# --- as a test ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
async def servers() -> AsyncIterator[Servers]:
    running = await start_servers()
    yield running
    await stop_servers(running)


def test_there_are_enough_hostile_inputs() -> None:
    assert len(CASES) >= 25


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
async def test_hostile_input(case: Case, servers: Servers) -> None:
    row = await run_case(case, servers)
    assert row.outcome == case.expect, row.message
    if case.expect == BLOCKED:
        assert row.local_hits == 0
        assert "is blocked" in row.message
    # A hostile server never holds a fetch past its deadline. Those that hold do so for 30 s or
    # for ever, so the slack a loaded machine needs to wind the fetch down still tells them apart.
    deadline = fetch_settings(**case.settings).fetch_timeout_seconds
    assert row.seconds < deadline + SCHEDULING_SLACK_SECONDS, row.seconds


if __name__ == "__main__":
    main()
