"""The one way TaskCrawler opens outgoing HTTP sessions: behind the address guard, with hard
header limits, no cookies and no proxy settings from the environment. Page fetches and webhook
deliveries both talk to addresses a stranger named, so both go through here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver

from taskcrawler.fetch.guard import AddressGuard, GuardedResolver

# aiohttp's own defaults, pinned here because they are a security limit, not a tuning knob: a
# server that sends a megabyte of headers gets a clean bad_response instead of our memory.
MAX_LINE_SIZE = 8190
MAX_FIELD_SIZE = 8190
MAX_HEADERS = 128


def guarded_session(
    guard: AddressGuard,
    *,
    limit: int,
    connect_timeout: float,
    headers: Mapping[str, str],
    resolver: AbstractResolver | None = None,
    **connector_options: Any,
) -> aiohttp.ClientSession:
    """A session whose every connection goes to an address ``guard`` vetted (when enabled).

    The total deadline is left to the caller (an ``asyncio.timeout`` around the whole exchange):
    aiohttp's own total would restart on every redirect hop.
    """
    chosen: AbstractResolver = resolver or aiohttp.DefaultResolver()
    if guard.enabled:
        chosen = GuardedResolver(guard, chosen)
        connector_options["socket_factory"] = guard.socket_factory
    connector = aiohttp.TCPConnector(limit=limit, resolver=chosen, **connector_options)
    return aiohttp.ClientSession(
        connector=connector,
        headers=dict(headers),
        timeout=aiohttp.ClientTimeout(total=None, sock_connect=connect_timeout),
        # Requests are independent: a cookie set by one site must not follow another.
        cookie_jar=aiohttp.DummyCookieJar(),
        trust_env=False,
        max_line_size=MAX_LINE_SIZE,
        max_field_size=MAX_FIELD_SIZE,
        max_headers=MAX_HEADERS,
    )
