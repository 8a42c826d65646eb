"""API keys: who is calling, and the keys an admin manages."""

from __future__ import annotations

import asyncio
import ipaddress
import math
import time
from collections import Counter, OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager

from taskcrawler.domain.errors import LimitExceeded, NotFound, Unauthenticated
from taskcrawler.domain.keys import (
    ANONYMOUS_OWNER,
    KEY_PREFIX,
    ApiKey,
    Caller,
    NewKey,
    parse_token,
    secret_matches,
)
from taskcrawler.storage.ports import KeyRepository

#: How long a verified key is trusted without asking the database again. Revoking through the
#: API clears it at once in that process; other API processes notice within this time.
KEY_CACHE_SECONDS = 5.0
#: The window over which a client address's failed authentications are counted.
FAILURE_WINDOW_SECONDS = 60.0
#: Client addresses whose failures are remembered at most (the least recent forgotten first).
MAX_FAILING_ADDRESSES = 10_000


class FailedLogins:
    """Failed authentications per client address in a fixed window, in this process. An
    address over its limit is refused before its key is looked up: checked after a lookup,
    a flood of random keys would reach the database unthrottled (one lookup each). The keys
    being looked up for an address count as the failures they may be: a flood sent at once
    would otherwise be looked up whole before its first failure was known."""

    def __init__(self, per_minute: int) -> None:
        #: Failures allowed per address in a window; 0: no limit.
        self.per_minute = per_minute
        #: address -> (window's end, failures in it), least recently failing first.
        self._failures: OrderedDict[str, tuple[float, int]] = OrderedDict()
        #: address -> the key ids being looked up for it (each once, however many ask).
        self._looking: dict[str, Counter[str]] = {}

    def check(self, address: str | None) -> None:
        if not self.per_minute or address is None:
            return
        client = _client(address)
        now = time.monotonic()
        ends, failures = self._failures.get(client, (0.0, 0))
        if ends <= now:
            failures = 0
        if failures + len(self._looking.get(client, ())) >= self.per_minute:
            raise LimitExceeded(
                "too many failed authentications from this address: try again later",
                # Lookups alone are answered within the second.
                retry_after=math.ceil(ends - now) if failures else 1,
            )

    @contextmanager
    def looking_up(self, address: str | None, key_id: str) -> Iterator[None]:
        """:meth:`check` the address, then count ``key_id`` as being looked up for it until
        the block ends."""
        self.check(address)
        if not self.per_minute or address is None:
            yield
            return
        client = _client(address)
        looking = self._looking.setdefault(client, Counter())
        looking[key_id] += 1
        try:
            yield
        finally:
            looking[key_id] -= 1
            if not looking[key_id]:
                del looking[key_id]
            if not looking and self._looking.get(client) is looking:
                del self._looking[client]

    def failed(self, address: str | None) -> None:
        if not self.per_minute or address is None:
            return
        now = time.monotonic()
        client = _client(address)
        ends, count = self._failures.pop(client, (0.0, 0))
        if ends <= now:
            ends, count = now + FAILURE_WINDOW_SECONDS, 0
        self._failures[client] = (ends, count + 1)
        while len(self._failures) > MAX_FAILING_ADDRESSES:
            self._failures.popitem(last=False)


def _client(address: str) -> str:
    """Who an address stands for: an IPv6 client is given a /64, every address of which it
    may use, so it counts as one."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


class KeyService:
    def __init__(
        self, keys: KeyRepository, *, required: bool, failures_per_minute: int = 0
    ) -> None:
        self.keys = keys
        #: Failed authentications allowed per client address in a window (0: no limit).
        self.failed_logins = FailedLogins(failures_per_minute)
        #: Whether a request without a key is refused (else it is the anonymous tenant's).
        self.required = required
        self._cache: dict[str, tuple[float, ApiKey, str]] = {}
        #: Lookups under way by key id, with :attr:`_changes` as each began: requests sent
        #: together with one key share one (a flood repeating a made-up key costs one).
        self._lookups: dict[str, tuple[int, asyncio.Future[tuple[ApiKey, str] | None]]] = {}
        #: Counts the keys this process revoked or changed: a lookup that began before one
        #: may have read it as it was, and must not cache that.
        self._changes = 0

    # --- authentication -------------------------------------------------------------------

    async def caller(self, token: str | None, address: str | None = None) -> Caller:
        """The caller a bearer token (None: no token sent) stands for, sent from client
        ``address`` (None: unknown, not limited)."""
        if token is None:
            if self.required:
                raise Unauthenticated(
                    "an API key is required: Authorization: Bearer <key> (an operator makes "
                    "one with `taskcrawler keys create --name NAME`)"
                )
            return Caller(ANONYMOUS_OWNER)
        parsed = parse_token(token)
        if parsed is None:
            raise Unauthenticated(
                "malformed Authorization header: expected Bearer tc_<id>_<secret>"
            )
        key_id, secret = parsed
        if key_id in self._cache:
            # A key this process verified lately costs no lookup: a client sharing an address
            # with a flood (a proxy, a NAT) keeps working with it.
            key = await self._verified(key_id, secret)
        else:
            with self.failed_logins.looking_up(address, key_id):
                key = await self._verified(key_id, secret)
        if key is None:
            self.failed_logins.failed(address)
            raise Unauthenticated(
                "unknown or revoked API key: `taskcrawler keys list` shows the active ones"
            )
        return Caller(key.owner, key)

    async def foreign_caller(self, token: str | None, address: str | None = None) -> Caller:
        """The caller of a request from another service's tools (Firecrawl's), which insist on
        sending a key of their own kind (``fc-…``). Where keys are not required such a token
        stands for nobody: the anonymous tenant. A TaskCrawler key (``tc_…``) is checked as
        ever, so a mistyped one is refused rather than quietly taken for another tenant."""
        if token is not None and not self.required and not token.startswith(KEY_PREFIX + "_"):
            token = None
        return await self.caller(token, address)

    async def _verified(self, key_id: str, secret: str) -> ApiKey | None:
        cached = self._cache.get(key_id)
        if cached is None or cached[0] < time.monotonic():
            changes, found = await self._find_active(key_id)
            if found is None:
                self._cache.pop(key_id, None)
                return None
            cached = (time.monotonic() + KEY_CACHE_SECONDS, *found)
            if changes == self._changes:
                self._cache[key_id] = cached
        _, key, secret_hash = cached
        return key if secret_matches(secret, secret_hash) else None

    async def _find_active(self, key_id: str) -> tuple[int, tuple[ApiKey, str] | None]:
        """The key's lookup, shared with the requests that ask while it is under way, and the
        count of changes made when it began (what it read may predate a later one)."""
        lookup = self._lookups.get(key_id)
        # One begun before a key was revoked or changed may have read it as it was: not shared.
        if lookup is None or lookup[0] != self._changes:
            future: asyncio.Future[tuple[ApiKey, str] | None] = asyncio.ensure_future(
                self.keys.find_active(key_id)
            )
            lookup = self._lookups[key_id] = (self._changes, future)
            future.add_done_callback(lambda done: self._lookup_done(key_id, done))
        changes, future = lookup
        return changes, await asyncio.shield(future)

    def _lookup_done(self, key_id: str, done: asyncio.Future[tuple[ApiKey, str] | None]) -> None:
        lookup = self._lookups.get(key_id)
        if lookup is not None and lookup[1] is done:
            del self._lookups[key_id]
        if not done.cancelled():
            done.exception()  # retrieved: its requests may all have gone

    # --- management -----------------------------------------------------------------------

    async def create(
        self,
        name: str,
        *,
        is_admin: bool = False,
        requests_per_minute: int | None = None,
        max_pending_jobs: int | None = None,
        callback_url: str | None = None,
    ) -> tuple[NewKey, ApiKey]:
        """A new key; its token is returned once and never stored."""
        return await self.keys.create(
            name,
            is_admin=is_admin,
            requests_per_minute=requests_per_minute,
            max_pending_jobs=max_pending_jobs,
            callback_url=callback_url,
        )

    async def list_keys(self) -> list[ApiKey]:
        return await self.keys.list_keys()

    async def revoke(self, key_id: str) -> None:
        if not await self.keys.revoke(key_id):
            raise NotFound("no active key with this id")
        self._forget(key_id)

    async def rotate_webhook_secret(self, key_id: str) -> ApiKey:
        """The key with a new webhook secret (shown this once). Deliveries are signed when
        sent, so every POST from now on, retries of earlier ones included, carries it."""
        key = await self.keys.rotate_webhook_secret(key_id)
        if key is None:
            raise NotFound("no active key with this id")
        self._forget(key_id)  # the cached key holds the old secret
        return key

    def _forget(self, key_id: str) -> None:
        self._changes += 1
        self._cache.pop(key_id, None)
