"""Politeness per host: at most N requests in flight to one host, and a minimum gap between starts.

The gap is the configured delay, or more for one request when the caller asks for more: the
fetcher passes the host's robots.txt ``Crawl-delay`` (capped) with every request, and the
larger of the two spaces the starts.

Two implementations of one small protocol: :class:`MemoryHostLimiter` for the embedded mode (one
process), :class:`RedisHostLimiter` for production (every worker process on every machine shares
the limit). ``async with limiter.slot(host):`` holds one slot for the duration of a request.
"""

from __future__ import annotations

import asyncio
import logging
import random
import uuid
from collections import deque
from collections.abc import Awaitable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, TypeVar

from taskcrawler.domain import ErrorCode, FetchError, QueueUnavailable
from taskcrawler.settings import Settings

if TYPE_CHECKING:
    from redis.asyncio import Redis

log = logging.getLogger(__name__)
_T = TypeVar("_T")


class HostBusyError(FetchError):
    """No slot for the host within the wait allowed. Transient: the job can be rescheduled
    instead of holding a worker slot while it waits."""

    def __init__(self, host: str, waited: float, retry_after: float) -> None:
        super().__init__(
            ErrorCode.HOST_BUSY,
            f"no politeness slot for {host} within {waited:g} s",
            transient=True,
            retry_after=retry_after,
        )


class HostLimiter(Protocol):
    #: Requests in flight to one host at most.
    concurrency: int
    #: The gap between starts every host gets (robots.txt may ask more of its own).
    delay_seconds: float

    def slot(
        self,
        host: str,
        *,
        max_wait: float | None = None,
        delay: float | None = None,
        concurrency: int | None = None,
    ) -> AbstractAsyncContextManager[None]:
        """Hold one of the host's slots; raise :class:`HostBusyError` after ``max_wait`` s.
        ``delay``: this host's own gap between starts (robots.txt Crawl-delay), honoured when it
        is larger than the limiter's. ``concurrency``: this key's own number of slots (a
        crawl's ``max_concurrency``), when it is not a host's."""
        ...

    async def try_slots(self, host: str, count: int, *, delay: float | None = None) -> Slots:
        """Up to ``count`` of the host's slots, those free now: none is waited for. Each is
        held until :meth:`give_back`; ``delay`` as for :meth:`slot`."""
        ...

    async def try_slots_each(self, asks: Sequence[SlotAsk]) -> list[Slots]:
        """:meth:`try_slots` for several hosts at once (one round trip to Redis)."""
        ...

    def give_back(self, host: str, token: str) -> None:
        """Hand back a slot :meth:`try_slots` gave."""
        ...

    async def close(self) -> None:
        """Hand back every slot still being released."""
        ...


@dataclass(frozen=True, slots=True)
class SlotAsk:
    host: str
    count: int
    delay: float | None = None


@dataclass(frozen=True, slots=True)
class Slots:
    """What :meth:`HostLimiter.try_slots` gave: a token per slot, and, when it gave fewer than
    asked because the gap between starts is not over, how long until it is."""

    tokens: list[str]
    retry_in: float | None = None


def host_key(host: str) -> str:
    """Limits are per host name (not per port): one server, however many ports it serves."""
    return host.rstrip(".").lower()


# --- in memory ----------------------------------------------------------------------------


@dataclass(slots=True)
class _Host:
    active: int = 0
    next_start: float = 0.0
    waiters: deque[asyncio.Future[None]] = field(default_factory=deque)
    limit: int = 0  # its own number of slots; 0: the limiter's


class MemoryHostLimiter:
    """Per-host limits inside one process. Waiters park on futures, woken one per release."""

    def __init__(self, concurrency: int, delay_seconds: float = 0.0) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self._concurrency = self.concurrency = concurrency
        self._delay = self.delay_seconds = delay_seconds
        self._hosts: dict[str, _Host] = {}

    def slot(
        self,
        host: str,
        *,
        max_wait: float | None = None,
        delay: float | None = None,
        concurrency: int | None = None,
    ) -> _MemorySlot:
        return _MemorySlot(self, host_key(host), max_wait, self.gap(delay), concurrency or 0)

    def gap(self, delay: float | None) -> float:
        """The gap between starts for a request that asks for ``delay``."""
        return self._delay if delay is None else max(self._delay, delay)

    async def close(self) -> None:
        return None

    async def acquire(
        self, key: str, max_wait: float | None, gap: float | None = None, limit: int = 0
    ) -> None:
        gap = self._delay if gap is None else gap
        if not self._try_acquire(key, gap, limit):
            await _within(max_wait, self._acquire(key, gap, limit), key, retry_after=gap or 1.0)

    def _state(self, key: str, limit: int) -> _Host:
        state = self._hosts.get(key)
        if state is None:
            state = self._hosts[key] = _Host(limit=limit)
        return state

    def _limit(self, state: _Host) -> int:
        return state.limit or self._concurrency

    def _try_acquire(self, key: str, gap: float, limit: int = 0) -> bool:
        """Take a slot at once if one is free, no one queues and no delay is due: the common
        case, without a timer or a coroutine."""
        state = self._state(key, limit)
        if state.active >= self._limit(state) or state.waiters:
            return False
        now = asyncio.get_running_loop().time()
        if state.next_start > now:
            return False
        state.active += 1
        state.next_start = now + gap
        return True

    async def try_slots(self, host: str, count: int, *, delay: float | None = None) -> Slots:
        key, gap = host_key(host), self.gap(delay)
        tokens: list[str] = []
        while len(tokens) < count and self._try_acquire(key, gap):
            tokens.append(key)
        state = self._hosts.get(key)
        wait = 0.0 if state is None else state.next_start - asyncio.get_running_loop().time()
        return Slots(tokens, wait if len(tokens) < count and wait > 0 else None)

    async def try_slots_each(self, asks: Sequence[SlotAsk]) -> list[Slots]:
        return [await self.try_slots(a.host, a.count, delay=a.delay) for a in asks]

    def give_back(self, host: str, token: str) -> None:
        self.release(host_key(host))

    def in_flight(self, host: str) -> int:
        state = self._hosts.get(host_key(host))
        return 0 if state is None else state.active

    async def _acquire(self, key: str, gap: float, limit: int = 0) -> None:
        loop = asyncio.get_running_loop()
        woken = False
        while True:
            # Looked up on every turn: an idle host's state is dropped on release.
            state = self._state(key, limit)
            queue_first = bool(state.waiters) and not woken
            if state.active < self._limit(state) and not queue_first:
                wait = state.next_start - loop.time()
                if wait <= 0:
                    state.active += 1
                    state.next_start = loop.time() + gap
                    return
                await asyncio.sleep(wait)
                continue
            await self._park(state)
            woken = True

    async def _park(self, state: _Host) -> None:
        waiter = asyncio.get_running_loop().create_future()
        state.waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self._wake(state)  # we were woken but will not use it: pass it on
            raise
        finally:
            if waiter in state.waiters:
                state.waiters.remove(waiter)

    def release(self, key: str) -> None:
        state = self._hosts[key]
        state.active -= 1
        self._wake(state)
        now = asyncio.get_running_loop().time()
        if state.active == 0 and not state.waiters and state.next_start <= now:
            del self._hosts[key]

    @staticmethod
    def _wake(state: _Host) -> None:
        while state.waiters:
            waiter = state.waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return


class _MemorySlot:
    __slots__ = ("_gap", "_key", "_limit", "_limiter", "_max_wait")

    def __init__(
        self,
        limiter: MemoryHostLimiter,
        key: str,
        max_wait: float | None,
        gap: float,
        limit: int = 0,
    ) -> None:
        self._limiter = limiter
        self._key = key
        self._max_wait = max_wait
        self._gap = gap
        self._limit = limit

    async def __aenter__(self) -> None:
        await self._limiter.acquire(self._key, self._max_wait, self._gap, self._limit)

    async def __aexit__(self, *exc_info: object) -> None:
        self._limiter.release(self._key)


# --- through Redis ------------------------------------------------------------------------

# One atomic step per attempt, for every task of this process waiting on the host: it grants
# as many leases as are free (one when a delay spaces the starts). Redis's own clock is used so
# machines with skewed clocks agree.
# KEYS[1]: sorted set of leases (member: token, score: expiry ms); KEYS[2]: next allowed start ms.
# ARGV: concurrency, delay ms, lease ms, then one token per waiting task. Returns {granted, wait}:
# the first `granted` tokens now hold leases; wait is -1 when the host is full (wait for a
# release), else the ms until the next start is allowed.
_ACQUIRE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local free = tonumber(ARGV[1]) - redis.call('ZCARD', KEYS[1])
if free <= 0 then
  return {0, -1}
end
local next_start = tonumber(redis.call('GET', KEYS[2]) or '0')
if next_start > now then
  return {0, next_start - now}
end
local delay = tonumber(ARGV[2])
local granted = math.min(free, #ARGV - 3)
if delay > 0 then
  granted = 1
  redis.call('SET', KEYS[2], now + delay, 'PX', delay)
end
local lease = tonumber(ARGV[3])
for i = 1, granted do
  redis.call('ZADD', KEYS[1], now + lease, ARGV[3 + i])
end
redis.call('PEXPIRE', KEYS[1], lease)
if granted < free then
  return {granted, delay}
end
return {granted, -1}
"""

POLL_MIN_SECONDS = 0.005
POLL_MAX_SECONDS = 0.05


class RedisHostLimiter:
    """Per-host limits shared by every process that uses the same Redis and prefix.

    A slot is a lease in a sorted set that expires on its own, so a process killed mid-request
    frees its slots after ``lease_seconds`` (set it above the fetch deadline). A local gate first
    limits how many tasks of this process wait for one host; those ask together, one script call
    granting as many of them as there are free slots, and the rest poll with exponential backoff
    and jitter. Releases, likewise, go back in one round trip per pass of the event loop.
    """

    def __init__(
        self,
        redis: Redis,
        *,
        concurrency: int,
        delay_seconds: float = 0.0,
        lease_seconds: float = 60.0,
        prefix: str = "taskcrawler",
    ) -> None:
        # Imported here, not at the top: embedded mode has no Redis, and importing it costs
        # each process start about a tenth of a second of CPU.
        from redis.exceptions import RedisError

        self._redis = redis
        self._failures = (RedisError, OSError)
        self._concurrency = self.concurrency = concurrency
        self._delay_ms = int(delay_seconds * 1000)
        self.delay_seconds = delay_seconds
        self._lease_ms = max(1, int(lease_seconds * 1000))
        self._prefix = prefix
        self._local = MemoryHostLimiter(concurrency)
        self._acquire_script = redis.register_script(_ACQUIRE)
        # leases key -> (host key whose local gate to open, or '' for none; token)
        self._releasing: dict[str, list[tuple[str, str]]] = {}
        self._flusher: asyncio.Task[None] | None = None
        self._asking: dict[str, deque[_Ask]] = {}  # host key -> tasks waiting for a lease
        self._askers: dict[str, asyncio.Task[None]] = {}

    def keys(self, host: str) -> list[str]:
        # The {host} hash tag keeps both keys in one Redis Cluster slot (Lua needs that).
        base = f"{self._prefix}:politeness:{{{host_key(host)}}}"
        return [f"{base}:leases", f"{base}:next"]

    def slot(
        self,
        host: str,
        *,
        max_wait: float | None = None,
        delay: float | None = None,
        concurrency: int | None = None,
    ) -> _RedisSlot:
        gap_ms = self._delay_ms if delay is None else max(self._delay_ms, int(delay * 1000))
        return _RedisSlot(self, host, max_wait, gap_ms, concurrency or 0)

    async def hold(
        self, host: str, max_wait: float | None, gap_ms: int | None = None, limit: int = 0
    ) -> str:
        """Take the local gate, then a lease in Redis; returns the lease's token. ``gap_ms``:
        the gap between starts this request asks for (default: the limiter's delay);
        ``limit``: the key's own number of slots (0: the limiter's)."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        key = host_key(host)
        gap_ms = self._delay_ms if gap_ms is None else gap_ms
        await self._local.acquire(key, max_wait, limit=limit)
        try:
            left = None if max_wait is None else max(0.0, max_wait - (loop.time() - started))
            retry_after = max(gap_ms / 1000, 1.0)
            acquiring = self._acquire(host, gap_ms, limit)
            return await _within(left, acquiring, host, retry_after=retry_after)
        except BaseException:
            self._local.release(key)
            raise

    def release(self, host: str, token: str) -> None:
        """Queue the lease's release; the local gate opens once Redis has it back.

        Releases are sent by one task, as many as have queued up in one round trip, so a busy
        worker pays a fraction of a round trip per fetch. Nothing here awaits: a cancelled
        fetch hands its slot back as surely as a finished one.
        """
        self._queue_release(host, token, local=True)

    def _queue_release(self, host: str, token: str, *, local: bool) -> None:
        gate = host_key(host) if local else ""
        self._releasing.setdefault(self.keys(host)[0], []).append((gate, token))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush_releases(), name="politeness-release")

    async def close(self) -> None:
        if self._flusher is not None:
            await self._flusher

    async def try_slots(self, host: str, count: int, *, delay: float | None = None) -> Slots:
        """One script call: as many leases as the host has free now, up to ``count``."""
        gap_ms = self._delay_ms if delay is None else max(self._delay_ms, int(delay * 1000))
        tokens = [uuid.uuid4().hex for _ in range(count)]
        try:
            granted, wait_ms = await self._acquire_script(
                keys=self.keys(host), args=[self._concurrency, gap_ms, self._lease_ms, *tokens]
            )
        except self._failures as exc:
            raise QueueUnavailable(f"Redis unreachable for politeness limits: {exc}") from exc
        retry_in = wait_ms / 1000 if granted < count and wait_ms > 0 else None
        return Slots(tokens[:granted], retry_in)

    async def try_slots_each(self, asks: Sequence[SlotAsk]) -> list[Slots]:
        """One script call per host, all in one pipeline."""
        tokens = [[uuid.uuid4().hex for _ in range(ask.count)] for ask in asks]
        try:
            pipe = self._redis.pipeline(transaction=False)
            for ask, mine in zip(asks, tokens, strict=True):
                gap_ms = self._gap_ms(ask.delay)
                args: list[str | int] = [self._concurrency, gap_ms, self._lease_ms, *mine]
                await self._acquire_script(keys=self.keys(ask.host), args=args, client=pipe)
            answers = await pipe.execute()
        except self._failures as exc:
            raise QueueUnavailable(f"Redis unreachable for politeness limits: {exc}") from exc
        return [
            Slots(mine[:granted], wait_ms / 1000 if granted < len(mine) and wait_ms > 0 else None)
            for mine, (granted, wait_ms) in zip(tokens, answers, strict=True)
        ]

    def _gap_ms(self, delay: float | None) -> int:
        return self._delay_ms if delay is None else max(self._delay_ms, int(delay * 1000))

    def give_back(self, host: str, token: str) -> None:
        self._queue_release(host, token, local=False)

    async def _flush_releases(self) -> None:
        while self._releasing:
            batch, self._releasing = self._releasing, {}
            try:
                pipe = self._redis.pipeline(transaction=False)
                for leases, held in batch.items():
                    pipe.zrem(leases, *(token for _, token in held))
                await pipe.execute()
            except self._failures as exc:
                log.warning(
                    "politeness: could not release %d slots (%s); they expire", len(batch), exc
                )
            finally:
                for held in batch.values():
                    for gate, _ in held:
                        if gate:
                            self._local.release(gate)

    async def _acquire(self, host: str, gap_ms: int | None = None, limit: int = 0) -> str:
        """Wait for a lease; the host's asker asks Redis for every waiting task at once."""
        key = host_key(host)
        gap_ms = self._delay_ms if gap_ms is None else gap_ms
        ask = _Ask(uuid.uuid4().hex, asyncio.get_running_loop().create_future(), gap_ms, limit)
        self._asking.setdefault(key, deque()).append(ask)
        if key not in self._askers:
            self._askers[key] = asyncio.create_task(self._ask_for(host, key), name="politeness")
        try:
            return await ask.granted
        except asyncio.CancelledError:
            # Granted, then cancelled before this task ran again: the lease is ours to return.
            if ask.granted.done() and not ask.granted.cancelled() and not ask.granted.exception():
                self._queue_release(host, ask.token, local=False)
            raise

    async def _ask_for(self, host: str, key: str) -> None:
        keys = self.keys(host)
        backoff = POLL_MIN_SECONDS
        asks: list[_Ask] = []
        try:
            while asks := self._live_asks(key):
                tokens = [ask.token for ask in asks]
                # Asks for one host share its robots.txt, so their gaps agree; the largest wins.
                gap_ms = max(ask.gap_ms for ask in asks)
                limit = min((ask.limit for ask in asks if ask.limit), default=self._concurrency)
                try:
                    granted, wait_ms = await self._acquire_script(
                        keys=keys, args=[limit, gap_ms, self._lease_ms, *tokens]
                    )
                except self._failures as exc:
                    error = QueueUnavailable(f"Redis unreachable for politeness limits: {exc}")
                    for ask in asks:
                        if not ask.granted.done():
                            ask.granted.set_exception(error)
                    continue
                self._hand_out(host, key, asks, granted)
                if granted == len(asks):
                    backoff = POLL_MIN_SECONDS
                elif wait_ms >= 0:
                    await asyncio.sleep(wait_ms / 1000 + random.uniform(0, POLL_MIN_SECONDS))
                else:
                    await asyncio.sleep(random.uniform(backoff / 2, backoff))
                    backoff = min(backoff * 2, POLL_MAX_SECONDS)
        except BaseException as exc:
            # Cancelled (shutdown) or a bug: the waiting tasks learn it rather than wait forever.
            cancelled = not isinstance(exc, Exception)
            for ask in [*asks, *self._asking.pop(key, ())]:
                if ask.granted.done():
                    continue
                if cancelled:
                    ask.granted.cancel()
                else:
                    ask.granted.set_exception(exc)
            if cancelled:
                raise
        finally:
            del self._askers[key]

    def _live_asks(self, key: str) -> list[_Ask]:
        """Take the host's waiting tasks (dropping those that gave up); empty ends the asker."""
        queue = self._asking.get(key)
        asks = [ask for ask in queue or () if not ask.granted.done()]
        if not asks:
            self._asking.pop(key, None)
        elif queue is not None:
            queue.clear()
        return asks

    def _hand_out(self, host: str, key: str, asks: list[_Ask], granted: int) -> None:
        for ask in asks[:granted]:
            if ask.granted.done():  # gave up while Redis granted it: hand the lease back
                self._queue_release(host, ask.token, local=False)
            else:
                ask.granted.set_result(ask.token)
        # The rest keep their place ahead of tasks that came later.
        self._asking.setdefault(key, deque()).extendleft(reversed(asks[granted:]))


@dataclass(slots=True)
class _Ask:
    token: str
    granted: asyncio.Future[str]
    gap_ms: int = 0
    limit: int = 0


class _RedisSlot:
    __slots__ = ("_gap_ms", "_host", "_limit", "_limiter", "_max_wait", "_token")

    def __init__(
        self,
        limiter: RedisHostLimiter,
        host: str,
        max_wait: float | None,
        gap_ms: int,
        limit: int = 0,
    ) -> None:
        self._limiter = limiter
        self._host = host
        self._max_wait = max_wait
        self._gap_ms = gap_ms
        self._limit = limit
        self._token = ""

    async def __aenter__(self) -> None:
        self._token = await self._limiter.hold(
            self._host, self._max_wait, self._gap_ms, self._limit
        )

    async def __aexit__(self, *exc_info: object) -> None:
        self._limiter.release(self._host, self._token)


async def _within(
    max_wait: float | None, acquire: Awaitable[_T], host: str, *, retry_after: float
) -> _T:
    """Await ``acquire``, turning a wait longer than ``max_wait`` into :class:`HostBusyError`."""
    if max_wait is None:
        return await acquire
    try:
        async with asyncio.timeout(max_wait):
            return await acquire
    except TimeoutError:
        raise HostBusyError(host, max_wait, retry_after) from None


def make_host_limiter(settings: Settings, redis: Redis | None = None) -> HostLimiter:
    """The limiter for a deployment: shared through Redis when there is one, else in memory."""
    if redis is None:
        return MemoryHostLimiter(settings.host_concurrency, settings.host_delay_seconds)
    return RedisHostLimiter(
        redis,
        concurrency=settings.host_concurrency,
        delay_seconds=settings.host_delay_seconds,
        # Above the longest a slot can be held (one fetch, bounded by its deadline).
        lease_seconds=settings.fetch_timeout_seconds * 2 + 10,
        prefix=settings.redis_prefix,
    )
