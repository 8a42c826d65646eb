"""The address classifier and the host vetting, on every hostile spelling we know of."""

from __future__ import annotations

import ipaddress
import socket

import pytest
from hypothesis import given
from hypothesis import strategies as st
from yarl import URL

from taskcrawler.domain import ErrorCode, FetchError
from taskcrawler.fetch.guard import (
    AddressGuard,
    BlockedAddressError,
    BlockedSocketError,
    GuardedResolver,
    blocked_reason,
    parse_ip_host,
)
from tests.support.hostile import StaticResolver

# (URL as a client would send it, the address it really means, a word the reason must contain)
HOSTILE_URLS = [
    ("http://127.0.0.1/", "127.0.0.1", "loopback"),
    ("http://127.1/", "127.0.0.1", "loopback"),
    ("http://127.0.1/", "127.0.0.1", "loopback"),
    ("http://2130706433/", "127.0.0.1", "loopback"),
    ("http://0x7f000001/", "127.0.0.1", "loopback"),
    ("http://0X7F000001/", "127.0.0.1", "loopback"),
    ("http://0177.0.0.1/", "127.0.0.1", "loopback"),
    ("http://017700000001/", "127.0.0.1", "loopback"),
    ("http://0x7f.1/", "127.0.0.1", "loopback"),
    ("http://0x7f.0.0.0x1/", "127.0.0.1", "loopback"),
    ("http://127.000.000.001/", "127.0.0.1", "loopback"),
    ("http://127.0.0.1./", "127.0.0.1", "loopback"),
    ("http://127.255.255.254/", "127.255.255.254", "loopback"),
    ("http://0/", "0.0.0.0", "unspecified"),
    ("http://0.0.0.0/", "0.0.0.0", "unspecified"),
    ("http://10.0.0.1/", "10.0.0.1", "private"),
    ("http://012.0.0.1/", "10.0.0.1", "private"),
    ("http://172.16.0.1/", "172.16.0.1", "private"),
    ("http://192.168.1.1/", "192.168.1.1", "private"),
    ("http://3232235777/", "192.168.1.1", "private"),
    ("http://0xc0.0xa8.1.1/", "192.168.1.1", "private"),
    ("http://169.254.169.254/", "169.254.169.254", "link-local"),
    ("http://2852039166/", "169.254.169.254", "link-local"),
    ("http://0xa9fea9fe/", "169.254.169.254", "link-local"),
    ("http://100.64.0.1/", "100.64.0.1", "carrier-grade NAT"),
    ("http://224.0.0.1/", "224.0.0.1", "multicast"),
    ("http://240.0.0.1/", "240.0.0.1", "reserved"),
    ("http://255.255.255.255/", "255.255.255.255", "reserved"),
    ("http://192.0.2.1/", "192.0.2.1", "reserved"),
    ("http://198.18.0.1/", "198.18.0.1", "reserved"),
    ("http://[::1]/", "::1", "loopback"),
    ("http://[0:0:0:0:0:0:0:1]/", "::1", "loopback"),
    ("http://[::]/", "::", "unspecified"),
    ("http://[::ffff:127.0.0.1]/", "127.0.0.1", "IPv4-mapped"),
    ("http://[::ffff:7f00:1]/", "127.0.0.1", "IPv4-mapped"),
    ("http://[::ffff:169.254.169.254]/", "169.254.169.254", "IPv4-mapped"),
    ("http://[::127.0.0.1]/", "::7f00:1", "IPv4-compatible"),
    ("http://[64:ff9b::127.0.0.1]/", "127.0.0.1", "NAT64"),
    ("http://[64:ff9b::a9fe:a9fe]/", "169.254.169.254", "NAT64"),
    ("http://[2002:7f00:1::]/", "127.0.0.1", "6to4"),
    ("http://[2002:c0a8:101::1]/", "192.168.1.1", "6to4"),
    ("http://[fe80::1]/", "fe80::1", "link-local"),
    ("http://[fe80::1%25eth0]/", "fe80::1", "link-local"),
    ("http://[fc00::1]/", "fc00::1", "unique local"),
    ("http://[fd12:3456::1]/", "fd12:3456::1", "unique local"),
    ("http://[fec0::1]/", "fec0::1", "site-local"),
    ("http://[ff02::1]/", "ff02::1", "multicast"),
    ("http://[2001:db8::1]/", "2001:db8::1", "documentation"),
    ("http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", "2001:0:4136", "Teredo"),
    ("http://[100::1]/", "100::1", "discard"),
    ("http://①②⑦.0.0.1/", "127.0.0.1", "loopback"),
    ("http://127。0。0。1/", "127.0.0.1", "loopback"),
]

PUBLIC_ADDRESSES = [
    "8.8.8.8",
    "1.1.1.1",
    "93.184.215.14",
    "2606:4700:4700::1111",
    "2a00:1450:4001:82b::200e",
    "::ffff:8.8.8.8",
    "64:ff9b::808:808",
    "2002:808:808::1",
]


@pytest.mark.parametrize(("url", "address", "reason"), HOSTILE_URLS)
def test_every_spelling_of_a_blocked_host_is_refused(url: str, address: str, reason: str) -> None:
    host = URL(url).raw_host
    with pytest.raises(BlockedAddressError) as caught:
        AddressGuard().check_host(host)
    error = caught.value
    assert error.code == ErrorCode.BLOCKED_ADDRESS
    assert error.transient is False
    assert reason in error.message
    assert address in error.message
    assert "is blocked" in error.message


def test_the_table_is_big_enough() -> None:
    assert len(HOSTILE_URLS) >= 25


@pytest.mark.parametrize("address", PUBLIC_ADDRESSES)
def test_public_addresses_pass(address: str) -> None:
    assert blocked_reason(ipaddress.ip_address(address)) is None
    AddressGuard().check_host(address)
    AddressGuard().check_address("example.com", address)


@pytest.mark.parametrize("host", ["example.com", "localhost", "0x7g", "127.0.0.1x", "1.2.3.4.x"])
def test_names_are_left_to_the_resolver(host: str) -> None:
    """Not numeric, so aiohttp resolves them, and the resolver vets the answer."""
    assert parse_ip_host(host) is None
    AddressGuard().check_host(host)


@pytest.mark.parametrize(
    "host", ["1.2.3.4.5", "1.2.3.4.5.6", "999.1.1.1", "08.0.0.1", "127.0.0.256", "::zz"]
)
def test_numeric_hosts_the_guard_cannot_decode_are_refused(host: str) -> None:
    """aiohttp connects to these without resolving, so an undecodable one must not pass."""
    with pytest.raises(FetchError) as caught:
        AddressGuard().check_host(host)
    assert caught.value.code == ErrorCode.INVALID_URL
    assert caught.value.transient is False


def test_allow_private_networks_lifts_the_guard() -> None:
    guard = AddressGuard(enabled=False)
    for url, _address, _reason in HOSTILE_URLS:
        guard.check_host(URL(url).raw_host)
    guard.check_address("x", "127.0.0.1")


def test_the_allow_policy_is_an_exact_exception() -> None:
    loopback = ipaddress.ip_address("127.0.0.1")
    guard = AddressGuard(allow=lambda ip: ip == loopback)
    guard.check_host("127.0.0.1")
    guard.check_host("2130706433")  # same address, other spelling: same answer
    with pytest.raises(BlockedAddressError):
        guard.check_host("127.0.0.2")


@given(
    st.integers(min_value=1, max_value=4).flatmap(
        lambda n: st.tuples(
            st.lists(st.integers(0, 255), min_size=n - 1, max_size=n - 1),
            st.integers(0, (1 << (8 * (5 - n))) - 1),
            st.lists(st.sampled_from(["d", "x", "o"]), min_size=n, max_size=n),
        )
    )
)
def test_legacy_spellings_decode_exactly_like_inet_aton(
    spec: tuple[list[int], int, list[str]],
) -> None:
    """Whatever getaddrinfo would connect to, the guard must see the same address."""
    head, last, styles = spec
    parts = []
    for value, style in zip([*head, last], styles, strict=True):
        parts.append({"d": str(value), "x": hex(value), "o": "0" + oct(value)[2:]}[style])
    text = ".".join(parts)
    expected = ipaddress.IPv4Address(socket.inet_aton(text))
    assert parse_ip_host(text) == expected


def test_socket_factory_refuses_blocked_addresses() -> None:
    guard = AddressGuard()
    with pytest.raises(BlockedSocketError):
        guard.socket_factory((socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", 80)))
    with pytest.raises(BlockedSocketError):
        guard.socket_factory((socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("::1", 80, 0, 0)))
    sock = guard.socket_factory((socket.AF_INET, socket.SOCK_STREAM, 6, "", ("8.8.8.8", 80)))
    sock.close()


async def test_resolver_refuses_a_name_with_any_internal_answer() -> None:
    inner = StaticResolver(
        {
            "public.test": ["8.8.8.8"],
            "mixed.test": ["8.8.8.8", "10.0.0.1"],
            "meta.test": ["169.254.169.254"],
            "v6.test": ["::ffff:127.0.0.1"],
        }
    )
    resolver = GuardedResolver(AddressGuard(), inner)
    assert [r["host"] for r in await resolver.resolve("public.test", 80)] == ["8.8.8.8"]
    with pytest.raises(BlockedAddressError, match=r"10\.0\.0\.1 \(resolved from 'mixed.test'\)"):
        await resolver.resolve("mixed.test", 80)
    with pytest.raises(BlockedAddressError, match="link-local"):
        await resolver.resolve("meta.test", 80)
    with pytest.raises(BlockedAddressError, match="IPv4-mapped"):
        await resolver.resolve("v6.test", 80)
