"""``taskcrawler submit URL… | --file FILE [--wait]``: send URLs to a running API and, if asked,
watch them finish with a live progress bar and print a summary."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Unpack, cast

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from rich.text import Text

from taskcrawler.cli.client import (
    FINISHED,
    MAX_PAGE,
    ApiClient,
    ApiError,
    Job,
    api_key_from_env,
)
from taskcrawler.cli.commands import (
    EXIT_ERROR,
    EXIT_JOBS_FAILED,
    EXIT_OK,
    MAX_BATCH,
    STATUSES,
    request_fields,
)
from taskcrawler.cli.commands.render import (
    duration,
    err,
    fail,
    jobs_table,
    out,
    print_json,
    status_text,
)
from taskcrawler.cli.loop import run_async
from taskcrawler.client import JobOptions
from taskcrawler.contract.options import JOB_OPTIONS
from taskcrawler.domain import InvalidURL, validate_url

#: Up to this many unfinished jobs are polled one by one; more are found by listing finished jobs.
PER_JOB_POLL_LIMIT = 200
POLL_CONCURRENCY = 16
#: While waiting, an unreachable or overloaded API is asked again for this long before giving up.
GIVE_UP_AFTER_SECONDS = 60.0
#: The summary lists every job up to this many, else only the failed ones (this many at most).
DETAIL_ROWS = 50
#: Without a terminal (CI logs, pipes), a progress line at most this often.
PLAIN_PROGRESS_SECONDS = 2.0


class InputError(Exception):
    pass


# ------------------------------------------------------------------ input


def read_urls(arguments: Sequence[str], files: Sequence[str]) -> list[tuple[str, str]]:
    """``(where, url)`` pairs from the arguments and the files, in order; ``where`` names the
    argument or ``file:line`` for messages."""
    found = [(f"argument {n}", url.strip()) for n, url in enumerate(arguments, 1) if url.strip()]
    for name in files:
        try:
            text = sys.stdin.read() if name == "-" else Path(name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read {name}: {exc}") from None
        label = "<stdin>" if name == "-" else name
        for number, line in enumerate(text.splitlines(), 1):
            line = line.strip()
            if line and not line.startswith("#"):
                found.append((f"{label}:{number}", line))
    return found


def invalid(urls: Iterable[tuple[str, str]]) -> list[str]:
    """What the API would refuse, found before anything is sent."""
    problems = []
    for where, url in urls:
        try:
            validate_url(url)
        except InvalidURL as exc:
            problems.append(f"{where}: {url[:100]}: {exc}")
    return problems


def run(args: argparse.Namespace) -> int:
    try:
        found = read_urls(args.urls, args.file)
    except InputError as exc:
        fail(str(exc))
        return EXIT_ERROR
    if not found:
        fail("no URLs to submit: give them as arguments or with --file FILE")
        return EXIT_ERROR
    problems = invalid(found)
    if problems:
        for problem in problems[:10]:
            fail(problem)
        if len(problems) > 10:
            fail(f"... and {len(problems) - 10} more invalid URLs; nothing was submitted")
        return EXIT_ERROR
    return run_async(submit([url for _, url in found], args))


# ------------------------------------------------------------------ submitting


async def submit(urls: Sequence[str], args: argparse.Namespace) -> int:
    console = err()
    async with ApiClient(args.api, api_key_from_env()) as api:
        try:
            jobs, created = await send(api, urls, console, **job_options(args))
        except ApiError as exc:
            fail(str(exc))
            return EXIT_ERROR
        known = len(urls) - created
        console.print(
            f"Submitted {len(urls):,} URL{'s' if len(urls) != 1 else ''}: {created:,} new, "
            f"{known:,} already known ({len(jobs):,} job{'s' if len(jobs) != 1 else ''})."
        )
        if not args.wait:
            if args.json:
                print_json(list(jobs.values()))
            else:
                for job in jobs.values():
                    sys.stdout.write(f"{job['id']}\t{job['status']}\t{job['url']}\n")
            return EXIT_OK
        started = time.monotonic()
        try:
            finished = await wait(api, jobs, args, console)
        except ApiError as exc:
            fail(f"{exc} (while waiting; the jobs go on on the server)")
            return EXIT_ERROR
    elapsed = time.monotonic() - started
    if args.json:
        print_json(list(jobs.values()))
    else:
        summary(list(jobs.values()), elapsed, out())
    if not finished:
        unfinished = sum(job["status"] not in FINISHED for job in jobs.values())
        fail(
            f"stopped waiting after {duration(elapsed)}: {unfinished:,} jobs not finished yet "
            "(they go on on the server; `taskcrawler jobs list` shows them)"
        )
        return EXIT_JOBS_FAILED
    ok = all(job["status"] == "COMPLETED" for job in jobs.values())
    return EXIT_OK if ok else EXIT_JOBS_FAILED


def job_options(args: argparse.Namespace) -> JobOptions:
    """The job options the command line gives; each left out is the server's default."""
    options = request_fields(args, JOB_OPTIONS)
    if "formats" in options:
        options["formats"] = list(dict.fromkeys(options["formats"]))
    return cast(JobOptions, options)


async def send(
    api: ApiClient, urls: Sequence[str], console: Console, **options: Unpack[JobOptions]
) -> tuple[dict[str, Job], int]:
    """Submit in batches, with the job ``options``; the jobs by id in the order of the URLs, and
    how many are new."""
    jobs: dict[str, Job] = {}
    created = 0
    if len(urls) == 1:
        job, new = await api.submit(urls[0], **options)
        return {job["id"]: job}, int(new)
    show = console.is_terminal and len(urls) > MAX_BATCH
    with Progress(
        TextColumn("submitting"), BarColumn(), MofNCompleteColumn(),
        console=console, transient=True, disable=not show,
    ) as progress:  # fmt: skip
        task = progress.add_task("submit", total=len(urls))
        for start in range(0, len(urls), MAX_BATCH):
            chunk = urls[start : start + MAX_BATCH]
            try:
                answer = await api.submit_batch(chunk, **options)
            except ApiError as exc:
                if start:
                    exc.args = (f"{exc} (after {start:,} of {len(urls):,} URLs were submitted)",)
                raise
            created += int(answer["created"])
            for item in answer["jobs"]:
                item.pop("created", None)
                jobs.setdefault(item["id"], item)
            progress.update(task, advance=len(chunk))
    return jobs, created


# ------------------------------------------------------------------ waiting


class Tracker:
    """Live progress: a rich bar on a terminal, a plain line now and then elsewhere."""

    def __init__(self, console: Console, jobs: dict[str, Job]) -> None:
        self.console = console
        self.total = len(jobs)
        self.started = time.monotonic()
        self.done_at_start = self._counts(jobs)[0]
        self.last_line = 0.0
        self.last_counts: tuple[int, int] | None = None
        self.progress: Progress | None = None
        self.task: TaskID | None = None
        if console.is_terminal:
            self.progress = Progress(
                SpinnerColumn(),
                TextColumn("[bold]done"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("[red]{task.fields[failed]} failed"),
                TextColumn("{task.fields[rate]}"),
                TextColumn("ETA {task.fields[eta]}"),
                TimeElapsedColumn(),
                console=console,
            )
            self.task = self.progress.add_task("jobs", total=self.total, failed=0, rate="", eta="")
            self.progress.start()

    @staticmethod
    def _counts(jobs: dict[str, Job]) -> tuple[int, int]:
        done = failed = 0
        for job in jobs.values():
            if job["status"] in FINISHED:
                done += 1
                failed += job["status"] != "COMPLETED"
        return done, failed

    def update(self, jobs: dict[str, Job], *, final: bool = False) -> None:
        done, failed = self._counts(jobs)
        elapsed = time.monotonic() - self.started
        finished_here = done - self.done_at_start
        rate = finished_here / elapsed if elapsed > 0.2 and finished_here else 0.0
        eta = (self.total - done) / rate if rate else None
        rate_text = f"{rate:.1f} jobs/s"
        eta_text = duration(eta) if eta is not None else "-"
        if done >= self.total:
            eta_text = "0 s"
        if self.progress is not None and self.task is not None:
            self.progress.update(
                self.task, completed=done, failed=failed, rate=rate_text, eta=eta_text
            )
            return
        now = time.monotonic()
        changed = (done, failed) != self.last_counts
        if final or (changed and now - self.last_line >= PLAIN_PROGRESS_SECONDS):
            self.last_line, self.last_counts = now, (done, failed)
            self.console.print(
                f"progress: {done:,}/{self.total:,} done, {failed:,} failed, {rate_text}, "
                f"ETA {eta_text}",
                soft_wrap=True,
            )

    def note(self, message: str) -> None:
        self.console.print(Text(message, style="yellow"), soft_wrap=True)

    def stop(self) -> None:
        if self.progress is not None:
            self.progress.stop()


async def wait(
    api: ApiClient, jobs: dict[str, Job], args: argparse.Namespace, console: Console
) -> bool:
    """Poll until every job has finished (True) or ``--timeout`` passed (False); ``jobs`` is
    updated in place."""
    unfinished = {job_id for job_id, job in jobs.items() if job["status"] not in FINISHED}
    deadline = time.monotonic() + args.timeout if args.timeout else None
    tracker = Tracker(console, jobs)
    trouble_since: float | None = None
    try:
        tracker.update(jobs)
        while unfinished:
            interval = args.interval if len(unfinished) <= PER_JOB_POLL_LIMIT else 1.0
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                interval = min(interval, left)
            await asyncio.sleep(interval)
            try:
                for job in await poll(api, jobs, unfinished):
                    jobs[job["id"]] = job
                    if job["status"] in FINISHED:
                        unfinished.discard(job["id"])
                trouble_since = None
            except ApiError as exc:
                if not exc.transient:
                    raise
                trouble_since = trouble_since or time.monotonic()
                if time.monotonic() - trouble_since > GIVE_UP_AFTER_SECONDS:
                    raise
                tracker.note(f"{exc}; asking again")
                await asyncio.sleep(min(exc.retry_after or 1.0, 10.0))
            tracker.update(jobs)
        return True
    finally:
        tracker.update(jobs, final=True)
        tracker.stop()


async def poll(api: ApiClient, jobs: dict[str, Job], unfinished: set[str]) -> list[Job]:
    """The current state of (at least) the jobs that have finished since the last poll."""
    if len(unfinished) <= PER_JOB_POLL_LIMIT:
        gate = asyncio.Semaphore(POLL_CONCURRENCY)

        async def one(job_id: str) -> Job:
            async with gate:
                return await api.get_job(job_id)

        return list(await asyncio.gather(*(one(job_id) for job_id in unfinished)))
    # Many jobs: list the finished ones created since the oldest unfinished, page by page.
    oldest = min(datetime.fromisoformat(jobs[job_id]["created_at"]) for job_id in unfinished)
    since = (oldest - timedelta(seconds=1)).isoformat()
    found: list[Job] = []
    cursor: str | None = None
    while True:
        page, cursor = await api.list_jobs(
            statuses=sorted(FINISHED), created_after=since, limit=MAX_PAGE, cursor=cursor
        )
        found.extend(job for job in page if job["id"] in unfinished)
        if not cursor or not page:  # an empty page leads nowhere: the server is astray
            return found


# ------------------------------------------------------------------ summary


def summary(jobs: list[Job], elapsed: float, console: Console) -> None:
    counts = Counter(job["status"] for job in jobs)
    table = Table(title="Summary", title_justify="left", header_style="bold")
    table.add_column("STATUS")
    table.add_column("JOBS", justify="right")
    table.add_column("%", justify="right")
    for status in STATUSES:
        if counts[status]:
            share = 100 * counts[status] / len(jobs)
            table.add_row(status_text(status), f"{counts[status]:,}", f"{share:.0f}")
    console.print(table)
    if len(jobs) <= DETAIL_ROWS:
        console.print(jobs_table(jobs, title="Jobs"))
    else:
        failed = [job for job in jobs if job["status"] != "COMPLETED"]
        if failed:
            title = f"Not completed ({min(len(failed), DETAIL_ROWS)} of {len(failed):,} shown)"
            console.print(jobs_table(failed[:DETAIL_ROWS], title=title))
    parts = ", ".join(f"{counts[s]:,} {s.lower()}" for s in STATUSES if counts[s])
    console.print(f"{len(jobs):,} jobs: {parts}; waited {duration(elapsed)}.")
