"""The worker: claim jobs under a lease, fetch, extract, persist; keep leases alive; sweep."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from uuid import UUID

from prometheus_client import CollectorRegistry

from taskcrawler.common.batching import Coalescer
from taskcrawler.domain import (
    ClaimedJob,
    ErrorCode,
    FetchError,
    Outcome,
    ServiceUnavailable,
    UnstorableData,
    backoff_delay,
)
from taskcrawler.domain.pages import Archived, FetchedPage
from taskcrawler.domain.rendering import mobile_user_agent
from taskcrawler.domain.storable import storable_outcome
from taskcrawler.domain.transitions import RetryPolicy, Transition, decide, refused
from taskcrawler.extract.pdf import UnreadablePdf
from taskcrawler.extract.stored import (
    content_choice,
    extracted_formats,
    page_content,
    rederived_result,
)
from taskcrawler.fetch import Fetcher
from taskcrawler.observability import WorkerMetrics, bind_job, log_transition
from taskcrawler.queue import HostLines, JobQueue, MemoryHostLines
from taskcrawler.storage.ports import IdempotencyRepository, WorkRepository
from taskcrawler.worker.chunking import PageChunker, with_chunks
from taskcrawler.worker.crawling import CrawlPages, publish_pages
from taskcrawler.worker.frontier import Admitted, HostFrontier
from taskcrawler.worker.parsing import PageParser, ParseCrashed, ParseTimeout
from taskcrawler.worker.rendering import NO_BROWSER, RenderStep
from taskcrawler.worker.structuring import StructuringStep
from taskcrawler.worker.sweeper import SweepConfig, Sweeper

log = logging.getLogger(__name__)
#: What a job's error_log says of a failure that is ours, not the page's: what happened, never
#: an exception's class or text (they are logged with their traceback).
INTERNAL_ERROR = "an unexpected error in the worker; the job is retried (the worker's log has it)"
EXTRACTION_ERROR = "an unexpected error extracting the page (the worker's log has it)"
UNSTORABLE_REASON = "a value the database cannot hold (the worker's log names it)"

#: How many ids one consume call takes at most (one claim query each).
MAX_CLAIM_BATCH = 256
#: How long one consume call blocks when the queue is empty (a stop request ends the wait at once).
CONSUME_WAIT_SECONDS = 0.5
#: While ids wait for their hosts, the loop looks at the queue and at them at least this often.
PARKED_POLL_SECONDS = 0.05
#: Jobs waiting for their write (a group commit) hold no fetch slot, up to this many times the
#: concurrency and this many bytes of pages; past either, fetching waits for the database.
WRITE_BACKLOG_FACTOR = 3
WRITE_BACKLOG_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class WorkerConfig:
    """The settings a worker uses."""

    concurrency: int = 100
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    sweep: SweepConfig = field(default_factory=SweepConfig)
    #: A claimed job is recovered this long after its worker stops renewing its lease.
    lease_seconds: float = 60.0
    #: On a stop request, in-flight jobs get this long to finish before they are handed back.
    shutdown_grace_seconds: float = 10.0
    #: Keep every fetched body, for ``taskcrawler reextract``.
    archive_pages: bool = True
    #: Run the sweeper here. Off in all but one of the processes of a ``taskcrawler worker``
    #: whose queue they share: one sweeper publishes for all of them.
    sweeps: bool = True


#: What a write did with a transition: the transition recorded (the one given, or the failure
#: that replaced it), or the outage that kept it from being written.
Written = Transition | ServiceUnavailable


@dataclass(slots=True)
class WorkerStats:
    claimed: int = 0
    completed: int = 0
    failed: int = 0
    retried: int = 0
    deferred: int = 0


class Worker:
    """Runs up to ``config.concurrency`` jobs at once in this process.

    Every write goes through the store's guarded UPDATEs, so running many workers (processes,
    machines) against one database and queue is safe: a job is processed by whoever claimed it.
    """

    def __init__(
        self,
        config: WorkerConfig,
        store: WorkRepository,
        queue: JobQueue,
        fetcher: Fetcher,
        parser: PageParser,
        *,
        rng: random.Random | None = None,
        metrics: WorkerMetrics | None = None,
        rendering: RenderStep | None = None,
        chunker: PageChunker | None = None,
        crawls: CrawlPages | None = None,
        structuring: StructuringStep | None = None,
        lines: HostLines | None = None,
        answers: IdempotencyRepository | None = None,
    ) -> None:
        """``lines``: where ids wait for their host's slot (by default in this process);
        ``answers``: the ``Idempotency-Key`` answers whose expired ones the sweeper deletes."""
        self.config = config
        self.chunker = chunker
        # Without a model of its own the worker still reads selector schemas.
        self.structuring = structuring or StructuringStep(None, parser)
        self.store = store
        self.queue = queue
        self.fetcher = fetcher
        self.parser = parser
        # Without a step of its own the worker has no browser: see worker/rendering.py.
        self.rendering = rendering or RenderStep(None, NO_BROWSER, parser)

        self.crawls = crawls
        self.rng = rng or random.Random()
        self.stats = WorkerStats()
        lines = lines or MemoryHostLines()
        self.sweeper = Sweeper(config.sweep, store, queue, lines, answers=answers)
        self.frontier = HostFrontier(store, lines, fetcher.limiter, fetcher.robots_known)
        self._slots: dict[UUID, Admitted] = {}  # the politeness slot each claimed job holds
        self._slot_returned = asyncio.Event()  # a host slot came back: a parked id may go
        self._next_queue_look = 0.0  # while parked ids flow, the queue is read this often
        self._tasks: set[asyncio.Task[None]] = set()
        self._saving = 0  # of self._tasks, those past fetching and waiting for their write
        self._saving_bytes = 0  # the pages those hold
        self._slot_freed = asyncio.Event()
        self._lease_holders: Counter[UUID] = Counter()
        # The store bounds a batch: on SQLite every other writer (the API's inserts) waits
        # for the whole of one.
        self._writer: Coalescer[Transition, Written] = Coalescer(
            self._persist,
            max_batch=store.outcome_batch,
            concurrency=store.concurrent_writes,
            shared=(ServiceUnavailable,),
        )
        self._stopping = asyncio.Event()
        self.metrics = metrics or WorkerMetrics(CollectorRegistry())
        self.metrics.track_in_flight(lambda: len(self._tasks))

    # --- lifecycle ------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """Work until ``stop`` is set, then shut down gracefully (see :meth:`_shutdown`)."""
        helpers = [asyncio.create_task(self._heartbeat_loop(), name="heartbeat")]
        if self.config.sweeps:
            helpers.append(asyncio.create_task(self.sweeper.run(self._stopping), name="sweeper"))
        consumer = asyncio.create_task(self._consume_loop(), name="consume")
        await stop.wait()
        self._stopping.set()
        # A consumer waiting for a free slot (every slot busy) must see the stop now, not when
        # some fetch ends: otherwise the grace period starts only after that.
        self._slot_freed.set()
        await asyncio.gather(consumer, return_exceptions=True)
        # Ids parked in this process's own lines were never claimed: back to the queue, for
        # whichever worker is up (shared lines stay where the other workers take from them).
        with contextlib.suppress(ServiceUnavailable):
            await self._requeue(await self.frontier.clear())
        await self._shutdown()
        for task in helpers:
            task.cancel()
        await asyncio.gather(*helpers, return_exceptions=True)

    async def _shutdown(self) -> None:
        """Let in-flight jobs finish within the grace period; hand the rest back, unrepeated."""
        if self._tasks:
            log.info(
                "waiting up to %gs for %d jobs",
                self.config.shutdown_grace_seconds,
                len(self._tasks),
            )
            _, still_running = await asyncio.wait(
                self._tasks, timeout=self.config.shutdown_grace_seconds
            )
            for task in still_running:
                task.cancel()
            await asyncio.gather(*still_running, return_exceptions=True)

    # --- consuming ------------------------------------------------------------------------

    @property
    def free_slots(self) -> int:
        """Fetch slots: a job waiting for its write holds none, so fetching goes on while a
        group commit runs and the next commit takes a bigger batch (measured: about 8% more
        jobs/s than no backlog). The waiting jobs are bounded in number and bytes, or a stalled
        database would let the worker fetch without end."""
        if self._saving_bytes > WRITE_BACKLOG_BYTES:
            return 0
        concurrency = self.config.concurrency
        free = concurrency - (len(self._tasks) - self._saving)
        backlog_room = WRITE_BACKLOG_FACTOR * concurrency - self._saving
        return min(free, free + backlog_room)

    async def _consume_loop(self) -> None:
        failures = 0
        while not self._stopping.is_set():
            if self.free_slots <= 0:
                self._slot_freed.clear()
                await self._slot_freed.wait()
                continue
            # Ids taken from the queue or the lines and not yet claimed: if what follows fails
            # (the database is down), they go back to the queue, or they would wait out the
            # sweeper's redispatch delay once it is up again.
            unclaimed: list[UUID] = []
            try:
                wanted = min(self.free_slots, MAX_CLAIM_BATCH)
                admitted = await self._admit(wanted, unclaimed)
                claimed = await self._claim(admitted, unclaimed)
            except ServiceUnavailable as exc:
                await self._requeue(unclaimed)
                failures += 1
                delay = backoff_delay(failures, base=0.2, cap=5.0, rng=self.rng)
                log.warning("%s unavailable, retrying in %.1fs: %s", exc.dependency, delay, exc)
                await asyncio.sleep(delay)
                continue
            except Exception:
                # A bug must not silently stop this worker from consuming while it looks alive.
                await self._requeue(unclaimed)
                failures += 1
                log.exception("unexpected error while consuming; retrying")
                await asyncio.sleep(backoff_delay(failures, base=0.5, cap=10.0, rng=self.rng))
                continue
            failures = 0
            for job in claimed:
                self._start(job)

    async def _requeue(self, ids: Sequence[UUID]) -> None:
        if not ids:
            return
        try:
            await self.queue.publish(ids)
        except ServiceUnavailable as exc:
            # The queue is down too: the sweeper publishes them once both are back.
            log.warning("could not put %d job ids back in the queue: %s", len(ids), exc)

    async def _admit(self, wanted: int, unclaimed: list[UUID]) -> list[Admitted]:
        """Up to ``wanted`` ids whose hosts gave them a slot (worker/frontier.py): from the
        hosts' lines first, then new ones from the queue, parked and taken in turn. Ids taken
        from the queue are added to ``unclaimed`` until they are parked, for the caller to put
        back if what follows fails. While ids wait in the lines and none could go, it waits
        for a slot to come back here or a short poll, whichever is first."""
        self._slot_returned.clear()
        admitted = await self.frontier.take(wanted)
        now = asyncio.get_running_loop().time()
        if len(admitted) >= wanted or (admitted and now < self._next_queue_look):
            return admitted  # claimed at once; the queue is looked at on a later turn
        self._next_queue_look = now + PARKED_POLL_SECONDS
        waiting = self.frontier.waiting or bool(admitted)
        try:
            wait = 0.0 if waiting else CONSUME_WAIT_SECONDS
            ids = await self._consume(wanted - len(admitted), wait)
            unclaimed += ids
            await self.frontier.park(ids)
            unclaimed.clear()  # in the lines now
            if ids:
                admitted += await self.frontier.take(wanted - len(admitted))
        except BaseException:
            unclaimed += self.frontier.give_back(admitted)  # their slots handed back
            raise
        if not admitted and not ids and self.frontier.waiting:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(min(self.frontier.next_in, PARKED_POLL_SECONDS)):
                    await self._slot_returned.wait()
        return admitted

    async def _consume(self, wanted: int, wait: float) -> list[UUID]:
        """The queue's next ids; a stop request ends an idle wait at once instead of after up to
        :data:`CONSUME_WAIT_SECONDS` (each SIGTERM, each restart paid it).

        The wait is cancelled: the in-process queues take ids only after their wait ends, so none
        is lost; a Redis BLPOP cancelled just as its reply arrives may drop one id, and that job
        stays PENDING in the database, where the sweeper publishes it again (the queue is only a
        hint, sweeper.py)."""
        if self._stopping.is_set():
            # Set while this turn looked at the lines: take what is there without waiting, or
            # the stop would sit out a whole idle wait.
            wait = 0.0
        if wait <= 0:
            return await self.queue.consume(wanted, wait_seconds=0.0)
        consume = asyncio.ensure_future(self.queue.consume(wanted, wait_seconds=wait))
        stopping = asyncio.ensure_future(self._stopping.wait())
        try:
            await asyncio.wait({consume, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
            if not consume.done():
                consume.cancel()
            # Both end here, whoever came first (a cancelled BLPOP closes its connection).
            await asyncio.gather(consume, stopping, return_exceptions=True)
        return [] if consume.cancelled() else consume.result()

    async def _claim(self, admitted: Sequence[Admitted], unclaimed: list[UUID]) -> list[ClaimedJob]:
        """Claim the admitted ids; the slots of those not claimed (a duplicate message, a job
        no longer due) are handed back at once. If the claim fails, their ids are added to
        ``unclaimed``, to publish again."""
        if not admitted:
            return []
        try:
            claimed = await self.store.claim(
                [a.job_id for a in admitted],
                lease_seconds=self.config.lease_seconds,
                redispatch_after=self.config.sweep.redispatch_seconds,
            )
        except BaseException:
            unclaimed += self.frontier.give_back(admitted)
            raise
        held = {job.id for job in claimed}
        for slot in admitted:
            if slot.job_id in held:
                self._slots[slot.job_id] = slot
            else:
                self.frontier.done(slot)
        self.stats.claimed += len(claimed)
        self.metrics.claimed.inc(len(claimed))
        for job in claimed:
            self._lease_holders[job.lease_token] += 1
        return claimed

    def _start(self, job: ClaimedJob) -> None:
        task = asyncio.create_task(self._process(job), name=f"job-{job.id}")
        self._tasks.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self._slot_freed.set()
        if not task.cancelled() and task.exception() is not None:
            log.error("job task crashed", exc_info=task.exception())

    # --- one job --------------------------------------------------------------------------

    async def _process(self, job: ClaimedJob) -> None:
        bind_job(job.id)  # every log line of this task carries the job's id
        try:
            # Made storable here, once, whatever produced it: a page, a header, an error.
            outcome = await self._reuse_or_attempt(job)
            if job.crawl_id is not None and self.crawls is not None:
                outcome = await self.crawls.with_frontier(outcome)
            outcome = storable_outcome(outcome)
            transition = decide(outcome, self.config.retry, rng=self.rng)
            size = _held_bytes(outcome)
            self._saving += 1
            self._saving_bytes += size
            self._slot_freed.set()
            try:
                await self._save(transition)
            finally:
                self._saving -= 1
                self._saving_bytes -= size
        except asyncio.CancelledError:
            await self._hand_back(job)
            raise
        finally:
            self._release_slot(job)
            self._release_lease(job)

    def _release_slot(self, job: ClaimedJob) -> None:
        slot = self._slots.pop(job.id, None)
        if slot is not None:
            self.frontier.done(slot, pass_on=True)
            self._slot_returned.set()  # the consume loop may have ids of that host parked

    async def _reuse_or_attempt(self, job: ClaimedJob) -> Outcome:
        """A job given formats it lacked, made from its page's stored copy; a crawl's page
        read again from the stored copy its crawl's ``max_age`` allows (extracted as if just
        fetched: its formats, its links); else fetched."""
        if job.from_archive:
            try:
                archived = await self.store.archived_copy(job.id)
            except ServiceUnavailable as exc:
                # Not the job's failure: escaping, it crashed the job's task, whose lease then
                # expired as a lost worker's, an attempt counted (the last one FAILED it).
                return _unavailable(job, exc)
            if archived is not None:
                return await self._rederive(job, archived)
            # The copy is gone (archiving was turned off since): the page is fetched.
        if job.crawl_id is not None and self.crawls is not None:
            stored = await self.crawls.reusable(job)
            if stored is not None:
                return await self._extract(job, stored)
        return await self._attempt(job)

    async def _attempt(self, job: ClaimedJob) -> Outcome:
        rendered = None
        try:
            with self.metrics.fetch_seconds.time():
                try:
                    page = await self.fetcher.fetch(
                        job.url,
                        headers=_request_headers(job, self.fetcher.settings.user_agent),
                        options=job.options,
                        group=f"crawl:{job.crawl_id}" if job.crawl_id is not None else None,
                        held_host=self._held_host(job),
                    )
                finally:
                    self._release_slot(job)  # the page is read: its host may take the next
            if page.status != 304:
                rendered = await self.rendering.prepare(job, page)
        except FetchError as exc:
            return _failed(job, exc)
        except ServiceUnavailable as exc:
            # Redis (shared politeness, robots cache) is down: try again later without counting
            # a retry, as for a busy host; an outage must not use up the job's attempts.
            return _unavailable(job, exc)
        except Exception:
            # A bug or an error we have not classified: retried, so one odd failure is not final.
            log.exception("unexpected error fetching %s", job.url)
            return Outcome(
                job=job,
                error_code="internal_error",
                # The job's error_log reaches clients (the API, webhooks, the dashboard): it
                # says what happened; the exception's class and text stay in the log above.
                error_message=INTERNAL_ERROR,
                transient=True,
            )
        if page.status == 304:
            return Outcome(job=job, http_status=304, final_url=page.final_url, unchanged=True)
        if rendered is None:
            return await self._extract(job, page)
        return rendered.annotate(await self._extract(job, rendered.page))

    def _held_host(self, job: ClaimedJob) -> str | None:
        slot = self._slots.get(job.id)
        if slot is None or slot.token is None:
            return None
        if job.options.delay:
            # The job asks a gap of its own between requests to its host (a crawl's delay):
            # the slot the frontier gave is handed back, and the fetch takes one with the gap.
            self._release_slot(job)
            return None
        return slot.host

    async def _rederive(self, job: ClaimedJob, archived: Archived) -> Outcome:
        """Every format of ``job`` made from its stored page, as ``taskcrawler reextract``
        makes them: the copy is kept as it is, and what extraction does not make (how the page
        was rendered) is kept from the result it had."""
        outcome = await self._extract(job, archived.page, fetched=False)
        if not outcome.succeeded:
            return outcome
        result = rederived_result(archived.result, outcome.result)
        return dataclasses.replace(outcome, result=result)

    async def _extract(
        self, job: ClaimedJob, page: FetchedPage, *, fetched: bool = True
    ) -> Outcome:
        try:
            extraction = await self.parser.extract(
                page.body,
                url=page.final_url,
                charset=page.charset,
                formats=extracted_formats(job.parse_formats),
                content_type=page.content_type,
                choice=content_choice(job.options),
                max_pages=job.options.max_pages,
            )
        except ParseTimeout as exc:
            # Permanent: the same page would overrun again. Logged without a traceback, it is
            # the page's doing, not ours.
            log.warning("parse timeout for %s: %s", job.url, exc)
            return _unparsed(job, page, ErrorCode.PARSE_TIMEOUT, str(exc))
        except ParseCrashed as exc:
            log.warning("parse crashed for %s: %s", job.url, exc)
            return _unparsed(job, page, ErrorCode.PARSE_CRASHED, str(exc))
        except UnreadablePdf as exc:
            return _unparsed(job, page, ErrorCode.UNREADABLE_DOCUMENT, str(exc))
        except Exception:
            log.exception("extraction failed for %s", job.url)
            return _unparsed(job, page, ErrorCode.EXTRACTION, EXTRACTION_ERROR)
        outcome = Outcome(
            job=job,
            http_status=page.status,
            final_url=page.final_url,
            content_type=page.content_type,
            scraped_title=extraction.title,
            result={"metadata": extraction.metadata},
            etag=page.headers.get("etag"),
            last_modified=page.headers.get("last-modified"),
            content=page_content(extraction, job.formats, self._archive(page) if fetched else None),
            links=tuple(extraction.links) if job.crawl_id is not None else None,
            from_archive=not fetched,
            fetched_at=page.fetched_at,
        )
        outcome = await self.structuring.apply(job, outcome, page, extraction.markdown)
        return await with_chunks(self.chunker, outcome, extraction.markdown)

    def _archive(self, page: FetchedPage) -> FetchedPage | None:
        return page if self.config.archive_pages else None

    # --- persisting -----------------------------------------------------------------------

    async def _save(self, transition: Transition) -> None:
        """Persist, waiting out a database outage: the lease (renewed while we wait) keeps
        the job ours, and if it expires meanwhile the guarded write simply changes nothing."""
        failures = 0
        while True:
            try:
                written = await self._writer.submit(transition)
            except ServiceUnavailable as exc:
                written = exc
            if not isinstance(written, ServiceUnavailable):
                break
            failures += 1
            delay = backoff_delay(failures, base=0.2, cap=5.0, rng=self.rng)
            job_id = transition.job.id
            log.warning("cannot save job %s, retrying in %.1fs: %s", job_id, delay, written)
            await asyncio.sleep(delay)
        self._count(written)

    def _count(self, transition: Transition) -> None:
        tally = transition.tally
        setattr(self.stats, tally, getattr(self.stats, tally) + 1)
        self.metrics.record(transition)
        log_transition(transition)

    async def _persist(self, transitions: Sequence[Transition]) -> list[Written]:
        """Write a batch in one transaction. If the database refuses a value of one attempt,
        nothing of the batch is written: then each is written alone, so that only the one at
        fault fails (see :meth:`_persist_alone`) and the others are recorded as decided."""
        try:
            await self._record(transitions)
            return list(transitions)
        except UnstorableData as exc:
            if len(transitions) == 1:
                return [await self._record_refused(transitions[0], exc)]
            log.warning(
                "a batch of %d transitions was refused, writing each alone: %s",
                len(transitions),
                exc,
            )
        return [await self._persist_alone(transition) for transition in transitions]

    async def _persist_alone(self, transition: Transition) -> Written:
        """One transition, or an outage for its caller to wait out (the others go on)."""
        try:
            try:
                await self._record([transition])
            except UnstorableData as exc:
                return await self._record_refused(transition, exc)
        except ServiceUnavailable as exc:
            return exc
        return transition

    async def _record_refused(self, transition: Transition, exc: UnstorableData) -> Transition:
        """Record what the domain makes of a refused result: the job FAILED at once as
        unstorable_result, since the same page would be refused again."""
        # The driver's message (its class, the SQL parameter) is for the log, not the job.
        failed = refused(transition, UNSTORABLE_REASON)
        log.error("the database refused the result of job %s: %s", transition.job.id, exc)
        await self._record([failed])
        return failed

    async def _record(self, transitions: Sequence[Transition]) -> None:
        """Write ``transitions``; publish the crawl pages their write added."""
        added = await self.store.record_transitions(
            transitions, redispatch_after=self.config.sweep.redispatch_seconds
        )
        await publish_pages(self.queue, self.store, added)

    async def _hand_back(self, job: ClaimedJob) -> None:
        # The job is due at once: the next sweep, in whichever worker is still up, publishes it.
        try:
            await self.store.release([job])
        except ServiceUnavailable:
            log.warning("could not hand back job %s; its lease will expire", job.id)

    # --- leases ---------------------------------------------------------------------------

    def _release_lease(self, job: ClaimedJob) -> None:
        self._lease_holders[job.lease_token] -= 1
        if self._lease_holders[job.lease_token] <= 0:
            del self._lease_holders[job.lease_token]

    async def _heartbeat_loop(self) -> None:
        interval = self.config.lease_seconds / 3
        while True:
            await asyncio.sleep(interval)
            tokens = list(self._lease_holders)
            try:
                await self.store.renew_leases(tokens, lease_seconds=self.config.lease_seconds)
            except ServiceUnavailable as exc:
                log.warning("could not renew %d leases: %s", len(tokens), exc)
            except Exception:
                # Keep beating: a dead heartbeat would let every lease of this worker expire.
                log.exception("unexpected error renewing %d leases", len(tokens))


def _request_headers(job: ClaimedJob, user_agent: str) -> dict[str, str] | None:
    """The conditional headers, and a mobile render's user agent: the site serves the fetch
    the page a phone gets, which the browser is then handed."""
    headers = _conditional_headers(job) or {}
    if job.options.mobile:
        headers["User-Agent"] = mobile_user_agent(user_agent)
    return headers or None


def _conditional_headers(job: ClaimedJob) -> dict[str, str] | None:
    """If-None-Match / If-Modified-Since from the last successful fetch, so an unchanged page
    costs the server a 304 and us no parsing."""
    headers = {}
    if job.etag:
        headers["If-None-Match"] = job.etag
    if job.last_modified:
        headers["If-Modified-Since"] = job.last_modified
    return headers or None


def _failed(job: ClaimedJob, exc: FetchError) -> Outcome:
    return Outcome(
        job=job,
        http_status=exc.http_status,
        error_code=exc.code,
        error_message=exc.message,
        transient=exc.transient,
        retry_after=exc.retry_after,
    )


def _unavailable(job: ClaimedJob, exc: ServiceUnavailable) -> Outcome:
    """An attempt a dependency's outage stopped: deferred, no attempt counted."""
    return Outcome(
        job=job,
        error_code=ErrorCode.QUEUE_UNAVAILABLE,
        error_message=str(exc),
        transient=True,
    )


def _unparsed(job: ClaimedJob, page: FetchedPage, code: ErrorCode, message: str) -> Outcome:
    """A page fetched but not parsed: FAILED at once, the same page would fail again."""
    return Outcome(
        job=job,
        http_status=page.status,
        final_url=page.final_url,
        content_type=page.content_type,
        error_code=code,
        error_message=message,
    )


def _held_bytes(outcome: Outcome) -> int:
    """About what an outcome keeps in memory until it is written: its page and texts."""
    content = outcome.content
    if content is None:
        return 0
    archived = len(content.archive.body) if content.archive is not None else 0
    pictured = len(content.screenshot.png) if content.screenshot is not None else 0
    pictured += sum(len(capture.data) for capture in content.captures or ())
    return archived + pictured + sum(len(text) for text in content.texts.values())
