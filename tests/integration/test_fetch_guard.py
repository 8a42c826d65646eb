"""The guard against real sockets: a refused fetch must send nothing to the address.

Two servers stand in for the world: ``public`` on 127.0.0.1 (which a test-only allow policy
treats as a public host) and ``intranet`` on 127.0.0.2 (loopback too, and left blocked).
"""

from __future__ import annotations

import ipaddress
from collections.abc import AsyncIterator
from urllib.parse import quote

import pytest
from yarl import URL

from taskcrawler.domain import ErrorCode, FetchError
from taskcrawler.domain.scrape_options import ScrapeOptions
from taskcrawler.domain.urls import shares_credentials
from taskcrawler.fetch import Fetcher
from taskcrawler.fetch.guard import AddressGuard
from tests.support.hostile import HostileServer, StaticResolver, fetch_settings

PUBLIC_IP = ipaddress.ip_address("127.0.0.1")


@pytest.fixture
async def public() -> AsyncIterator[HostileServer]:
    server = await HostileServer("127.0.0.1").start()
    yield server
    await server.stop()


@pytest.fixture
async def intranet() -> AsyncIterator[HostileServer]:
    server = await HostileServer("127.0.0.2").start()
    yield server
    await server.stop()


def _pretend_public() -> AddressGuard:
    """The guard as in production, except that 127.0.0.1 counts as a public address."""
    return AddressGuard(allow=lambda ip: ip == PUBLIC_IP)


def _resolver() -> StaticResolver:
    return StaticResolver({"public.test": ["127.0.0.1"], "intranet.test": ["127.0.0.2"]})


async def _fetch_error(fetcher: Fetcher, url: str) -> FetchError:
    try:
        with pytest.raises(FetchError) as caught:
            await fetcher.fetch(url)
    finally:
        await fetcher.close()
    return caught.value


@pytest.mark.parametrize(
    "spelling", ["127.0.0.1", "127.1", "2130706433", "0x7f000001", "0177.0.0.1", "localhost"]
)
async def test_the_guard_sends_nothing_to_loopback(public: HostileServer, spelling: str) -> None:
    fetcher = Fetcher(fetch_settings())
    error = await _fetch_error(fetcher, f"http://{spelling}:{public.port}/page")
    assert error.code == ErrorCode.BLOCKED_ADDRESS
    assert not error.transient
    assert "127.0.0.1" in error.message
    assert "is blocked" in error.message
    assert public.total_hits == 0


async def test_allow_private_networks_reaches_loopback(public: HostileServer) -> None:
    fetcher = Fetcher(fetch_settings(allow_private_networks=True))
    try:
        page = await fetcher.fetch(public.url("/page"))
    finally:
        await fetcher.close()
    assert page.status == 200
    assert b"Hello" in page.body
    assert public.hits["/page"] == 1


async def test_a_name_is_resolved_once_and_the_vetted_address_is_used(
    public: HostileServer, intranet: HostileServer
) -> None:
    """DNS rebinding: the first answer is vetted and connected to; a second answer never is."""
    resolver = StaticResolver({"rebind.test": [["127.0.0.1"], ["127.0.0.2"]]})
    fetcher = Fetcher(fetch_settings(), guard=_pretend_public(), resolver=resolver)
    try:
        page = await fetcher.fetch(f"http://rebind.test:{public.port}/page")
    finally:
        await fetcher.close()
    assert page.status == 200
    assert resolver.calls == ["rebind.test"]
    assert public.hits["/page"] == 1
    assert intranet.total_hits == 0


@pytest.mark.parametrize(
    "target",
    [
        "http://intranet.test:{port}/secret",  # a name that resolves inward
        "http://127.0.0.2:{port}/secret",  # a literal
        "http://2130706434:{port}/secret",  # a decimal literal of 127.0.0.2
        "http://[::ffff:127.0.0.2]:{port}/secret",  # an IPv4-mapped literal
    ],
)
async def test_a_redirect_to_a_blocked_host_is_refused(
    public: HostileServer, intranet: HostileServer, target: str
) -> None:
    resolver = _resolver()
    fetcher = Fetcher(fetch_settings(), guard=_pretend_public(), resolver=resolver)
    hop = quote(target.format(port=intranet.port), safe="")
    error = await _fetch_error(fetcher, f"http://public.test:{public.port}/redirect-to?url={hop}")
    assert error.code == ErrorCode.BLOCKED_ADDRESS
    assert "127.0.0.2" in error.message
    assert public.hits["/redirect-to"] == 1
    assert intranet.total_hits == 0


async def test_every_redirect_hop_goes_through_the_resolver(public: HostileServer) -> None:
    """Each hop to a new name is resolved, and so vetted, by the guarded resolver."""
    resolver = StaticResolver({"public.test": ["127.0.0.1"], "www.public.test": ["127.0.0.1"]})
    fetcher = Fetcher(fetch_settings(), guard=_pretend_public(), resolver=resolver)
    hop = quote(f"http://www.public.test:{public.port}/page", safe="")
    try:
        page = await fetcher.fetch(f"http://public.test:{public.port}/redirect-to?url={hop}")
    finally:
        await fetcher.close()
    assert page.final_url == f"http://www.public.test:{public.port}/page"
    assert resolver.calls == ["public.test", "www.public.test"]


async def test_the_socket_backstop_holds_when_the_other_checks_are_bypassed(
    public: HostileServer,
) -> None:
    """Should the host check and the resolver both miss, no socket is opened to the address."""

    class BrokenGuard(AddressGuard):
        def check_host(self, host: str | None) -> None:
            return None  # simulate a bug in the URL check

    fetcher = Fetcher(fetch_settings(), guard=BrokenGuard())
    error = await _fetch_error(fetcher, public.url("/page"))
    assert error.code == ErrorCode.BLOCKED_ADDRESS
    assert public.total_hits == 0


@pytest.fixture
async def other_port() -> AsyncIterator[HostileServer]:
    server = await HostileServer("127.0.0.1").start()
    yield server
    await server.stop()


async def test_the_requests_own_headers_stay_with_the_pages_origin(
    public: HostileServer, other_port: HostileServer
) -> None:
    # The same host on another port is another origin (another service): a token for the
    # page must not follow a redirect there, as a browser's credentials would not.
    options = ScrapeOptions.create(headers={"Authorization": "Bearer secret"})
    fetcher = Fetcher(fetch_settings(), guard=_pretend_public())
    elsewhere = quote(other_port.url("/page"), safe="")
    same_origin = quote(public.url("/page"), safe="")
    try:
        await fetcher.fetch(public.url(f"/redirect-to?url={elsewhere}"), options=options)
        await fetcher.fetch(public.url(f"/redirect-to?url={same_origin}"), options=options)
    finally:
        await fetcher.close()
    assert [h.get("Authorization") for h in public.request_headers] == ["Bearer secret"] * 3
    assert [h.get("Authorization") for h in other_port.request_headers] == [None]


@pytest.mark.parametrize(
    ("target", "kept"),
    [
        ("http://a.test/next", True),
        ("https://a.test/next", True),  # the common upgrade: the token goes encrypted
        ("https://a.test:8443/next", False),
        ("http://a.test:8080/next", False),
        ("http://b.test/next", False),
        ("http://A.TEST/next", True),
    ],
)
def test_own_headers_follow_the_origin_or_its_upgrade_to_https(target: str, kept: bool) -> None:
    assert shares_credentials(URL("http://a.test/page"), URL(target)) is kept


def test_own_headers_never_go_from_https_down_to_http() -> None:
    assert not shares_credentials(URL("https://a.test/page"), URL("http://a.test/next"))
