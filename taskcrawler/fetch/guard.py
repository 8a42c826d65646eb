"""The address guard: TaskCrawler fetches what strangers name, so it must never reach inward.

Three checks, each covering a path the others do not:

1. :meth:`AddressGuard.check_host` vets the host of every URL before it is requested (the first URL
   and every redirect hop). aiohttp connects to IP literals *without* calling the resolver, so a
   literal in any spelling (``127.1``, ``2130706433``, ``0x7f000001``, ``0177.0.0.1``,
   ``[::ffff:127.0.0.1]``) must be decoded and judged here.
2. :class:`GuardedResolver` wraps the real resolver and vets every address a name resolves to. The
   connector connects to exactly the addresses it returns (and caches only those), so there is no
   second DNS lookup an attacker could answer differently (DNS rebinding).
3. :meth:`AddressGuard.socket_factory` is a backstop at the lowest level: it refuses to create a
   socket for a blocked address, so even a bug in 1 or 2 cannot send a packet there.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from typing import Any

from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.helpers import is_ip_address

from taskcrawler.domain import ErrorCode, FetchError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
AllowPolicy = Callable[[IPAddress], bool]

_V4 = ipaddress.IPv4Network
_V6 = ipaddress.IPv6Network

# Explicit tables rather than ``ipaddress.is_global`` alone: the stdlib's answers have changed
# between patch releases (CVE-2024-4032), and a table names the reason in the error message.
_BLOCKED_V4: tuple[tuple[ipaddress.IPv4Network, str], ...] = (
    (_V4("0.0.0.0/8"), "unspecified ('this network')"),
    (_V4("10.0.0.0/8"), "private"),
    (_V4("100.64.0.0/10"), "carrier-grade NAT"),
    (_V4("127.0.0.0/8"), "loopback"),
    (_V4("169.254.0.0/16"), "link-local (cloud metadata)"),
    (_V4("172.16.0.0/12"), "private"),
    (_V4("192.0.0.0/24"), "reserved (IETF protocol assignments)"),
    (_V4("192.0.2.0/24"), "reserved (documentation)"),
    (_V4("192.88.99.0/24"), "reserved (6to4 relay)"),
    (_V4("192.168.0.0/16"), "private"),
    (_V4("198.18.0.0/15"), "reserved (benchmarking)"),
    (_V4("198.51.100.0/24"), "reserved (documentation)"),
    (_V4("203.0.113.0/24"), "reserved (documentation)"),
    (_V4("224.0.0.0/4"), "multicast"),
    (_V4("240.0.0.0/4"), "reserved (includes broadcast)"),
)
_BLOCKED_V6: tuple[tuple[ipaddress.IPv6Network, str], ...] = (
    (_V6("::/128"), "unspecified"),
    (_V6("::1/128"), "loopback"),
    (_V6("::/8"), "reserved (includes IPv4-compatible and IPv4-translated)"),
    (_V6("64:ff9b:1::/48"), "NAT64 local-use"),
    (_V6("100::/64"), "reserved (discard-only)"),
    (_V6("2001::/32"), "Teredo tunnel"),
    (_V6("2001:db8::/32"), "reserved (documentation)"),
    (_V6("2001::/23"), "reserved (IETF protocol assignments)"),
    (_V6("3fff::/20"), "reserved (documentation)"),
    (_V6("fc00::/7"), "private (unique local)"),
    (_V6("fe80::/10"), "link-local"),
    (_V6("fec0::/10"), "site-local"),
    (_V6("ff00::/8"), "multicast"),
)
_NAT64 = _V6("64:ff9b::/96")


class BlockedAddressError(FetchError):
    """The URL names, or its host resolves to, an address TaskCrawler must not reach. Permanent."""

    def __init__(self, host: str, address: str, reason: str) -> None:
        where = "" if host == address else f" (resolved from {host!r})"
        super().__init__(
            ErrorCode.BLOCKED_ADDRESS,
            f"the address {address}{where} is blocked: {reason}",
            transient=False,
        )
        self.host = host
        self.address = address
        self.reason = reason


class BlockedSocketError(OSError):
    """Raised by the socket-level backstop; an OSError so aiohttp treats it as a failed connect."""


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address, str] | None:
    """The IPv4 address an IPv6 address tunnels or maps to, when the network would reach it."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped, "IPv4-mapped"
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF), "NAT64"
    if ip.sixtofour is not None:
        return ip.sixtofour, "6to4"
    return None


def blocked_reason(ip: IPAddress) -> str | None:
    """Why ``ip`` must not be fetched, or ``None`` when it is a public unicast address."""
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(ip)
        if embedded is not None:
            inner, kind = embedded
            reason = blocked_reason(inner)
            return None if reason is None else f"{reason} {inner} inside {kind} IPv6"
        if ip.scope_id:
            return "scoped IPv6 address"
        table: tuple[tuple[Any, str], ...] = _BLOCKED_V6
    else:
        table = _BLOCKED_V4
    for network, reason in table:
        if ip in network:
            return reason
    # Catch-all for ranges the tables do not name yet.
    return None if ip.is_global else "not globally routable"


_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
_OCT_DIGITS = frozenset("01234567")
_DEC_DIGITS = frozenset("0123456789")


def _inet_aton_part(text: str) -> int | None:
    """One part of a legacy IPv4 spelling: ``0x`` hex, leading-zero octal, or decimal.

    Digits are checked by hand because ``int()`` also accepts signs, ``_`` and non-ASCII digits.
    """
    if text[:2] in ("0x", "0X"):
        digits, base, allowed = text[2:] or "0", 16, _HEX_DIGITS
    elif len(text) > 1 and text.startswith("0"):
        digits, base, allowed = text[1:], 8, _OCT_DIGITS
    else:
        digits, base, allowed = text, 10, _DEC_DIGITS
    if not digits or not set(digits) <= allowed:
        return None
    return int(digits, base)


def _parse_legacy_ipv4(host: str) -> ipaddress.IPv4Address | None:
    """Decode every spelling ``inet_aton`` accepts: ``a``, ``a.b``, ``a.b.c``, ``a.b.c.d``.

    The last part fills the remaining bytes, so ``127.1`` is 127.0.0.1 and ``2130706433`` is
    127.0.0.1 too. getaddrinfo accepts these spellings, so the guard must understand them all.
    """
    parts = host.split(".")
    if not 1 <= len(parts) <= 4 or any(not p for p in parts):
        return None
    values = [_inet_aton_part(p) for p in parts]
    if any(v is None for v in values):
        return None
    numbers = [v for v in values if v is not None]
    *head, last = numbers
    if any(v > 0xFF for v in head) or last >= 1 << (8 * (5 - len(numbers))):
        return None
    value = last
    for index, part in enumerate(head):
        value |= part << (8 * (3 - index))
    return ipaddress.IPv4Address(value)


def parse_ip_host(host: str) -> IPAddress | None:
    """The address a URL host spells in any numeric form, or ``None`` for a DNS name."""
    text = host.strip("[]")
    if text.endswith(".") and not text.endswith(".."):
        text = text[:-1]  # "127.0.0.1." is a fully-qualified spelling of the same address
    if ":" in text:
        try:
            return ipaddress.IPv6Address(text.split("%", 1)[0])
        except ValueError:
            return None
    return _parse_legacy_ipv4(text)


def _looks_numeric(host: str) -> bool:
    """True when aiohttp would skip the resolver for ``host`` (so only check_host can vet it)."""
    return is_ip_address(host) or is_ip_address(host.rstrip("."))


class AddressGuard:
    """The policy: which addresses may be fetched.

    ``allow`` is an explicit exception list that wins over the built-in blocks. It is the seam for
    tests (pretend one loopback address is a public host) and for deployments that must reach one
    known intranet address without opening all of them. ``enabled=False``
    (``TASKCRAWLER_ALLOW_PRIVATE_NETWORKS=true``) lifts the guard entirely.
    """

    def __init__(self, *, enabled: bool = True, allow: AllowPolicy | None = None) -> None:
        self.enabled = enabled
        self._allow = allow

    def reason(self, ip: IPAddress) -> str | None:
        if not self.enabled or (self._allow is not None and self._allow(ip)):
            return None
        return blocked_reason(ip)

    def check_address(self, host: str, address: str) -> None:
        """Raise :class:`BlockedAddressError` unless ``address`` (an IP string) may be fetched."""
        ip = parse_ip_host(address)
        if ip is None:
            raise BlockedAddressError(host, address, "not an IP address")
        reason = self.reason(ip)
        if reason is not None:
            raise BlockedAddressError(host, str(ip), reason)

    def check_host(self, host: str | None) -> None:
        """Vet a URL's host before it is requested. DNS names are left to the resolver."""
        if not self.enabled or not host:
            return
        ip = parse_ip_host(host)
        if ip is not None:
            reason = self.reason(ip)
            if reason is not None:
                raise BlockedAddressError(host, str(ip), reason)
        elif _looks_numeric(host):
            # aiohttp would connect to it without resolving; refuse what we cannot judge.
            raise FetchError(
                ErrorCode.INVALID_URL,
                f"the host {host!r} looks like an IP address but is not a valid one",
                transient=False,
            )

    def socket_factory(self, addr_info: tuple[Any, ...]) -> socket.socket:
        """Create the connector's sockets, refusing blocked destinations (the last line)."""
        family, type_, proto, _canonname, sockaddr = addr_info
        address = str(sockaddr[0])
        ip = parse_ip_host(address)
        if ip is None or self.reason(ip) is not None:
            raise BlockedSocketError(f"refusing to connect to blocked address {address}")
        sock = socket.socket(family=family, type=type_, proto=proto)
        sock.setblocking(False)
        return sock


class GuardedResolver(AbstractResolver):
    """Resolves with ``inner`` and refuses the host when any answer is a blocked address.

    Refusing the whole answer (rather than dropping the bad records) is deliberate: a name that
    mixes public and internal records is the usual shape of a rebinding attack.
    """

    def __init__(self, guard: AddressGuard, inner: AbstractResolver) -> None:
        self._guard = guard
        self._inner = inner

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        results = await self._inner.resolve(host, port, family)
        for result in results:
            self._guard.check_address(host, result["host"])
        return results

    async def close(self) -> None:
        await self._inner.close()
