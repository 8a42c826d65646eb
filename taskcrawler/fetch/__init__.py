"""Fetching pages: one long-lived aiohttp session per process, behind the address guard, hard
limits, robots.txt and per-host politeness; every failure is a typed :class:`FetchError`."""

from taskcrawler.fetch.fetcher import FetchedPage, Fetcher
from taskcrawler.fetch.guard import AddressGuard, BlockedAddressError
from taskcrawler.fetch.politeness import (
    HostBusyError,
    HostLimiter,
    MemoryHostLimiter,
    RedisHostLimiter,
    make_host_limiter,
)

__all__ = [
    "AddressGuard",
    "BlockedAddressError",
    "FetchedPage",
    "Fetcher",
    "HostBusyError",
    "HostLimiter",
    "MemoryHostLimiter",
    "RedisHostLimiter",
    "make_host_limiter",
]
