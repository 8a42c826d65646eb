"""Where job ids wait for their host: a worker claims a job only once its host can take the
fetch, so a slow or rate-limited host costs neither claims nor writes, and never holds up
the jobs of other hosts.

The queue carries job ids alone. For the ids it takes, the worker reads their URLs (one read,
no lock, no write) and parks each id under its host, in the order they came. Each turn of
the consume loop asks the politeness limiter, host by host, for as many slots as it has ids
waiting, taking only those free now (one Redis call per host): the ids given a slot are
claimed, each with its slot, which the fetch then uses (see ``Fetcher.fetch(held_host=…)``).
A host that had none is asked again once a slot of it is handed back here, once its gap
between starts is over, or after a short pause that grows while it stays full (the slots
of other processes are handed back where this one cannot see). Crawler frontiers keep a queue
per host for the same reason (Mercator's back queues).

An id parked here is not claimed: if this process dies, its job is a PENDING job whose
message was lost, published again by the sweeper. Bounded: past ``max_per_host`` ids of one
host (or ``max_total`` in all) an id is left PENDING, for the sweeper to publish again later,
rather than held; on a graceful stop the parked ids go back to the queue.

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
from taskcrawler.storage.ports import WorkRepository

#: A slot is passed on from one fetch of a host to the next for at most this long after it
#: was taken (the limiter's lease lasts longer), then handed back and taken anew.
PASS_ON_SECONDS = 20.0
#: A host that gave no slot (and no time to wait for) is asked again after this long at
#: first, twice as long each time it gives none, up to the cap.
RETRY_MIN_SECONDS = 0.01
RETRY_MAX_SECONDS = 0.1
MAX_PER_HOST = 5_000
MAX_TOTAL = 50_000


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
    ids: dict[UUID, None] = field(default_factory=dict)  # insertion-ordered, no duplicates
    url: str = ""  # one of its URLs: its origin's robots.txt is the host's
    not_before: float = 0.0
    backoff: float = RETRY_MIN_SECONDS
    in_flight: int = 0
    #: Slots a finished fetch passed on to the next id of its host, with when each was taken.
    spare: list[tuple[str, float]] = field(default_factory=list)


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
        limiter: HostLimiter | None,
        robots_known: Callable[[str], tuple[bool, float | None]],
        *,
        max_per_host: int = MAX_PER_HOST,
        max_total: int = MAX_TOTAL,
    ) -> None:
        self.store = store
        self.limiter = limiter
        self.robots_known = robots_known
        self.max_per_host = max_per_host
        self.max_total = max_total
        self._hosts: dict[str, _Host] = {}
        self._parked = 0
        #: Ids left PENDING for the sweeper because the bounds were reached.
        self.overflowed = 0

    @property
    def parked(self) -> int:
        return self._parked

    def parked_ids(self) -> list[UUID]:
        return [job_id for state in self._hosts.values() for job_id in state.ids]

    def clear(self) -> list[UUID]:
        """Forget every parked id (to publish them again); returns them."""
        ids = self.parked_ids()
        for host, state in self._hosts.items():
            state.ids.clear()
            self._give_back_spare(host, state)
        self._parked = 0
        self._drop_idle()
        return ids

    async def park(self, job_ids: Sequence[UUID]) -> None:
        """Read the URLs of the claimable ones of ``job_ids`` and park each under its host."""
        known = {job_id for state in self._hosts.values() for job_id in state.ids}
        fresh = [job_id for job_id in job_ids if job_id not in known]
        if not fresh:
            return
        for job_id, url in (await self.store.claimable_urls(fresh)).items():
            host = host_of(url)
            state = self._hosts.get(host)
            if state is None:
                state = self._hosts[host] = _Host(url=url)
            if len(state.ids) >= self.max_per_host or self._parked >= self.max_total:
                self.overflowed += 1
                continue
            state.ids[job_id] = None
            self._parked += 1

    async def take(self, wanted: int) -> list[Admitted]:
        """Up to ``wanted`` parked ids whose hosts give them a slot now, hosts taken in turn;
        every host asked in one round trip."""
        now = asyncio.get_running_loop().time()
        asks: list[tuple[str, _Host, SlotAsk]] = []
        free: list[tuple[str, _Host, int]] = []  # without politeness, or without a host
        admitted: list[Admitted] = []
        served: set[str] = set()  # hosts given a slot passed on: asked nothing more this turn
        for host, state in list(self._hosts.items()):
            if state.spare and not state.ids:
                self._give_back_spare(host, state)  # nothing of its host left to pass it to
            elif state.spare and len(admitted) < wanted:
                passed = state.spare[: min(wanted - len(admitted), len(state.ids))]
                del state.spare[: len(passed)]
                admitted += self._hand_out(host, state, passed)
                served.add(host)
        budget = wanted - len(admitted)
        for host, state in self._hosts.items():
            if budget <= 0:
                break
            if not state.ids or state.not_before > now or host in served:
                continue
            count = min(len(state.ids), budget)
            if self.limiter is not None:  # never more than a host can give
                count = min(count, self.limiter.concurrency)
            if self.limiter is None or not host:
                free.append((host, state, count))
            else:
                known, delay = self.robots_known(state.url)
                if not known and state.in_flight:
                    # Its first fetch is reading robots.txt: wait for what that says.
                    state.not_before = now + RETRY_MAX_SECONDS
                    continue
                asks.append((host, state, SlotAsk(host, count if known else 1, delay)))
            budget -= count
        answers = []
        if asks and self.limiter is not None:
            answers = await self.limiter.try_slots_each([a for *_, a in asks])
        for host, state, count in free:
            admitted += self._hand_out(host, state, [(None, now)] * count)
        for (host, state, _), slots in zip(asks, answers, strict=True):
            self._note(state, slots, now)
            admitted += self._hand_out(host, state, [(token, now) for token in slots.tokens])
        self._drop_idle()
        return admitted

    def _hand_out(
        self, host: str, state: _Host, tokens: Sequence[tuple[str | None, float]]
    ) -> list[Admitted]:
        admitted = []
        for token, since in tokens:
            job_id = next(iter(state.ids))
            del state.ids[job_id]
            self._parked -= 1
            state.in_flight += 1
            admitted.append(Admitted(job_id, host, token, since))
        if tokens:  # served: to the back of the line, behind hosts that waited longer
            del self._hosts[host]
            self._hosts[host] = state
        return admitted

    @staticmethod
    def _note(state: _Host, slots: Slots, now: float) -> None:
        """When the host is worth asking again."""
        if slots.tokens:
            state.backoff = RETRY_MIN_SECONDS
        elif slots.retry_in is not None:
            state.not_before = now + slots.retry_in
        else:
            state.not_before = now + state.backoff
            state.backoff = min(state.backoff * 2, RETRY_MAX_SECONDS)

    def unparked(self, job_ids: Sequence[UUID]) -> list[UUID]:
        """Those of ``job_ids`` not parked here."""
        parked = {job_id for state in self._hosts.values() for job_id in state.ids}
        return [job_id for job_id in job_ids if job_id not in parked]

    def give_back(self, admitted: Sequence[Admitted]) -> None:
        """Slots taken for ids that could not be claimed (the database is down): handed back,
        the ids parked again at the front of their hosts' lines."""
        for slot in reversed(admitted):
            self.done(slot)
            state = self._hosts.setdefault(slot.host, _Host())
            state.ids = {slot.job_id: None, **state.ids}
            self._parked += 1

    def done(self, admitted: Admitted, *, pass_on: bool = False) -> None:
        """The slot of ``admitted`` is done with (its fetch ended, or it was not claimed). With
        ``pass_on``, a slot of a host that spaces no starts goes to the next id parked for it
        (no round trip to give it back and take it again); else it is handed back."""
        state = self._hosts.get(admitted.host)
        token = admitted.token
        if token is not None and not (pass_on and self._passes_on(admitted, state)):
            if self.limiter is not None:
                self.limiter.give_back(admitted.host, token)
        elif token is not None and state is not None:
            state.spare.append((token, admitted.since))
        if state is None:
            return
        state.in_flight = max(0, state.in_flight - 1)
        state.not_before = 0.0
        state.backoff = RETRY_MIN_SECONDS
        if not state.ids and not state.in_flight:
            del self._hosts[admitted.host]

    def _passes_on(self, admitted: Admitted, state: _Host | None) -> bool:
        if state is None or not state.ids or self.limiter is None or self.limiter.delay_seconds:
            return False
        if asyncio.get_running_loop().time() - admitted.since > PASS_ON_SECONDS:
            return False
        known, delay = self.robots_known(state.url)
        return known and not delay

    def _give_back_spare(self, host: str, state: _Host) -> None:
        if self.limiter is not None:
            for token, _ in state.spare:
                self.limiter.give_back(host, token)
        state.spare.clear()

    def _drop_idle(self) -> None:
        for host in [h for h, s in self._hosts.items() if not s.ids and not s.in_flight]:
            self._give_back_spare(host, self._hosts.pop(host))

    def next_retry(self) -> float | None:
        """Seconds until a parked host may give a slot (0: now), None when nothing is parked."""
        if not self._parked:
            return None
        now = asyncio.get_running_loop().time()
        return max(0.0, min(s.not_before for s in self._hosts.values() if s.ids) - now)
