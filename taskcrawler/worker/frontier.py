"""Where job ids wait for their host: a worker claims a job only once its host can take the
fetch, so a slow or rate-limited host costs neither claims nor writes, and never holds up
the jobs of other hosts.

The queue carries job ids alone. For the ids it takes, the worker reads their URLs (one read,
no lock, no write) and parks each id in its host's line (``HostLines``: in Redis, shared by
every worker of the deployment; without Redis, in this process, whose queue is its own too).
Each turn of the consume loop reads which hosts have ids waiting and are not resting, asks
the politeness limiter for as many slots as each has ids (all hosts in one round trip),
and takes from each line only as many ids as it was given slots: those are claimed, each with
its slot, which the fetch then uses (see ``Fetcher.fetch(held_host=…)``). A host that gave no
slot rests (the gap between its starts, or a short pause that grows while it stays full), and
a slot handed back wakes it, for every worker. Crawler frontiers keep a queue per host for the
same reason (Mercator's back queues).

An id in a line is not claimed: if the lines are lost (this process dies, Redis restarts
empty), or a worker dies between taking ids and claiming them, their jobs are PENDING jobs
whose message was lost, published again by the sweeper.

Until this process knows a host's robots.txt, that host gets one fetch at a time from it: the
first fetch reads robots.txt, whose Crawl-delay then spaces the slots given after it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from uuid import UUID

from yarl import URL

from taskcrawler.fetch.politeness import HostLimiter, SlotAsk, Slots, host_key
from taskcrawler.queue.base import HostLines, Taken, Waiting
from taskcrawler.storage.ports import WorkRepository

#: A slot is passed on from one fetch of a host to the next for at most this long after it
#: was taken (the limiter's lease lasts longer), then handed back and taken anew.
PASS_ON_SECONDS = 20.0
#: A host that gave no slot (and no time to wait for) rests this long at first, twice as long
#: each time it gives none, up to the cap; a slot handed back ends its rest at once.
RETRY_MIN_SECONDS = 0.01
RETRY_MAX_SECONDS = 0.1
#: Hosts whose rest is remembered at most (those that gave no slot lately).
MAX_RESTING = 10_000


@dataclass(frozen=True, slots=True)
class Admitted:
    """A job id whose host has given it a slot (``token``; None without politeness)."""

    job_id: UUID
    host: str
    token: str | None
    #: When the slot was taken (loop time): a slot passed on is never older than its lease.
    since: float = 0.0


@dataclass(slots=True)
class _Host:
    """What this process knows of a host: its fetches, the slots they passed on."""

    url: str = ""  # one of its URLs: its origin's robots.txt is the host's
    in_flight: int = 0
    waiting: int = 0  # ids in its line when last seen
    #: Slots a finished fetch passed on to the next id of its host, with when each was taken.
    spare: list[tuple[str, float]] = field(default_factory=list)

    @property
    def idle(self) -> bool:
        """Nothing of it left in this process: it can be forgotten."""
        return not self.in_flight and not self.spare


@dataclass(slots=True)
class _Turn:
    """One turn of :meth:`HostFrontier.take`: what is asked of the limiter and the lines."""

    now: float
    budget: int
    tokens: dict[str, list[tuple[str | None, float]]] = field(default_factory=dict)
    asks: list[SlotAsk] = field(default_factory=list)
    rest: dict[str, float] = field(default_factory=dict)


def host_of(url: str) -> str:
    """The politeness key of ``url``'s host; '' when it has none (its fetch fails at once)."""
    try:
        return host_key(URL(url).raw_host or "")
    except (ValueError, TypeError):
        return ""


class HostFrontier:
    def __init__(
        self,
        store: WorkRepository,
        lines: HostLines,
        limiter: HostLimiter | None,
        robots_known: Callable[[str], tuple[bool, float | None]],
    ) -> None:
        self.store = store
        self.lines = lines
        self.limiter = limiter
        self.robots_known = robots_known
        self._hosts: dict[str, _Host] = {}
        self._woken: set[str] = set()  # hosts a slot came back to: their rest is over
        self._backoff: dict[str, float] = {}  # the next rest of hosts that gave no slot lately
        #: Claimable ids not parked: a duplicate already waiting, or past the lines' bounds.
        self.left_out = 0
        #: Whether any line had ids at the last look (then the loop polls instead of blocking).
        self.waiting = False
        #: Seconds until a host of the lines may be asked for a slot again, at the last look.
        self.next_in = 0.0

    async def park(self, job_ids: Sequence[UUID]) -> None:
        """Read the URLs of the claimable ones of ``job_ids`` and park each in its host's line."""
        if not job_ids:
            return
        urls = await self.store.claimable_urls(job_ids)
        entries = [(host_of(url), url, job_id) for job_id, url in urls.items()]
        added = await self.lines.park(entries)
        self.left_out += len(entries) - added
        self.waiting = self.waiting or added > 0

    async def take(self, wanted: int) -> list[Admitted]:
        """Up to ``wanted`` parked ids whose hosts give them a slot now, hosts taken in turn;
        three round trips at most: the ready hosts, their slots, their ids (only the last when
        slots passed on by finished fetches fill ``wanted``)."""
        turn = _Turn(asyncio.get_running_loop().time(), wanted)
        self._pass_on_spare(turn)
        try:
            taken = await self._take_turn(turn, wanted)
        except BaseException:
            # Every slot the turn holds (passed on, or just given) goes back: kept by nobody,
            # an in-process limiter's slot would be lost for good, and a lease in Redis until
            # it expires.
            self._give_back_tokens(turn.tokens)
            raise
        return self._hand_out(turn, taken)

    async def _take_turn(self, turn: _Turn, wanted: int) -> dict[str, Taken]:
        """The round trips of :meth:`take` after the slots passed on: the ready hosts, their
        slots (added to ``turn.tokens``), the ids taken from their lines."""
        if turn.budget > 0:  # slots passed on filled none of it: the lines are read
            woken, self._woken = self._woken, set()
            ready = await self.lines.ready(max(1, wanted), wake=sorted(woken))
            self.waiting, self.next_in = ready.lines > 0, ready.next_in
            for waiting in ready.hosts:
                if turn.budget <= 0:
                    break
                if waiting.host not in turn.tokens:
                    self._plan(turn, waiting)
        answers: list[Slots] = []
        if turn.asks and self.limiter is not None:
            answers = await self.limiter.try_slots_each(turn.asks)
        for ask, slots in zip(turn.asks, answers, strict=True):
            self._note(turn, ask.host, slots)
        if turn.rest:
            self.next_in = min(self.next_in or float("inf"), *turn.rest.values())
        counts = {host: len(tokens) for host, tokens in turn.tokens.items() if tokens}
        return await self.lines.take(counts, turn.rest)

    def _pass_on_spare(self, turn: _Turn) -> None:
        """Slots passed on by finished fetches go to their hosts' next ids first."""
        for host, state in self._hosts.items():
            if state.spare and turn.budget > 0:
                passed = state.spare[: turn.budget]
                del state.spare[: len(passed)]
                turn.tokens[host] = list(passed)
                turn.budget -= len(passed)

    def _plan(self, turn: _Turn, waiting: Waiting) -> None:
        """What to ask for ``waiting``'s host: slots of the limiter, or ids at once."""
        host = waiting.host
        state = self._hosts.setdefault(host, _Host())
        state.url, state.waiting = waiting.url, waiting.count
        count = min(waiting.count, turn.budget)
        if self.limiter is None or not host:
            turn.tokens[host] = [(None, turn.now)] * count
            turn.budget -= count
            return
        count = min(count, self.limiter.concurrency)  # never more than a host can give
        known, delay = self.robots_known(waiting.url)
        if not known and state.in_flight:
            # Its first fetch here is reading robots.txt: wait for what that says.
            turn.rest[host] = RETRY_MAX_SECONDS
            return
        count = count if known else 1  # its first fetch reads robots.txt
        turn.asks.append(SlotAsk(host, count, delay))
        turn.budget -= count

    def _note(self, turn: _Turn, host: str, slots: Slots) -> None:
        """The slots given; a host that gave none rests until it is worth asking again."""
        if slots.tokens:
            self._backoff.pop(host, None)
            turn.tokens[host] = [(token, turn.now) for token in slots.tokens]
        elif slots.retry_in is not None:
            turn.rest[host] = slots.retry_in
        else:
            if len(self._backoff) >= MAX_RESTING:
                self._backoff.clear()
            rest = turn.rest[host] = self._backoff.get(host, RETRY_MIN_SECONDS)
            self._backoff[host] = min(rest * 2, RETRY_MAX_SECONDS)

    def _hand_out(self, turn: _Turn, taken: dict[str, Taken]) -> list[Admitted]:
        """Each id taken with one of its host's slots; slots left over (another worker took
        the ids first) are handed back."""
        admitted = []
        for host, tokens in turn.tokens.items():
            line = taken.get(host, Taken([], 0))
            ids = line.ids
            state = self._hosts.setdefault(host, _Host())
            state.in_flight += len(ids)
            state.waiting = line.left  # what a finished fetch may pass its slot on to
            admitted += [
                Admitted(job_id, host, token, since)
                for job_id, (token, since) in zip(ids, tokens, strict=False)
            ]
            self._give_back_tokens({host: tokens[len(ids) :]})
        self._drop_idle()
        return admitted

    def give_back(self, admitted: Sequence[Admitted]) -> list[UUID]:
        """Slots taken for ids that could not be claimed (the database is down): handed back.
        Returns the ids, to publish again."""
        for slot in admitted:
            self.done(slot)
        return [slot.job_id for slot in admitted]

    def done(self, admitted: Admitted, *, pass_on: bool = False) -> None:
        """The slot of ``admitted`` is done with (its fetch ended, or it was not claimed). With
        ``pass_on``, a slot of a host that spaces no starts goes to the next id waiting for it
        (no round trip to give it back and take it again); else it is handed back and the host
        woken, for whichever worker asks first."""
        state = self._hosts.get(admitted.host)
        token = admitted.token
        if token is not None and pass_on and self._passes_on(admitted, state):
            assert state is not None
            state.spare.append((token, admitted.since))
        elif token is not None:
            self._give_back(admitted.host, token)
        self._backoff.pop(admitted.host, None)
        if state is not None:
            state.in_flight = max(0, state.in_flight - 1)
            # Only this host's state changed: the others were left busy or dropped already
            # (a look at every host, each job, grows with the hosts in flight).
            if state.idle:
                del self._hosts[admitted.host]

    def _passes_on(self, admitted: Admitted, state: _Host | None) -> bool:
        if state is None or not state.waiting or self.limiter is None:
            return False
        if self.limiter.delay_seconds:
            return False
        if asyncio.get_running_loop().time() - admitted.since > PASS_ON_SECONDS:
            return False
        known, delay = self.robots_known(state.url)
        return known and not delay

    def _give_back(self, host: str, token: str) -> None:
        if self.limiter is not None:
            self.limiter.give_back(host, token)
        self._woken.add(host)
        self._backoff.pop(host, None)

    def _give_back_tokens(self, tokens: dict[str, list[tuple[str | None, float]]]) -> None:
        for host, slots in tokens.items():
            for token, _ in slots:
                if token is not None:
                    self._give_back(host, token)

    def give_back_spare(self) -> None:
        """Every slot passed on and not yet used: handed back (the worker stops)."""
        for host, state in self._hosts.items():
            self._give_back_tokens({host: list(state.spare)})
            state.spare.clear()
        self._drop_idle()

    def _drop_idle(self) -> None:
        idle = [host for host, state in self._hosts.items() if state.idle]
        for host in idle:
            del self._hosts[host]

    async def clear(self) -> list[UUID]:
        """On a graceful stop: slots passed on handed back; the ids of lines that are this
        process's own returned, to publish again (shared lines stay for the other workers)."""
        self.give_back_spare()
        return await self.lines.clear()
