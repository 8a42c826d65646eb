"""``taskcrawler crawl URL [--wait]``, ``crawl status ID``, ``crawl cancel ID``: start a crawl on a
running API, watch it with a live progress bar, look at it, cancel it."""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

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

from taskcrawler.cli import ids
from taskcrawler.cli.client import ApiClient, ApiError, api_key_from_env
from taskcrawler.cli.commands import EXIT_ERROR, EXIT_JOBS_FAILED, EXIT_OK, request_fields
from taskcrawler.cli.commands.render import duration, err, fail, out, print_json, status_text
from taskcrawler.cli.loop import run_async
from taskcrawler.contract.crawls import CrawlIn

ACTIONS = ("status", "cancel")
#: While waiting, an unreachable or overloaded API is asked again for this long before giving up.
GIVE_UP_AFTER_SECONDS = 60.0
PLAIN_PROGRESS_SECONDS = 2.0

Crawl = dict[str, Any]


def run(args: argparse.Namespace) -> int:
    words: list[str] = args.target
    if words[0] in ACTIONS:
        if len(words) != 2:
            fail(f"usage: taskcrawler crawl {words[0]} ID")
            return EXIT_ERROR
        return run_async(_act(args, words[0], words[1]))
    if len(words) != 1:
        fail("give one start URL (or: crawl status ID, crawl cancel ID)")
        return EXIT_ERROR
    return run_async(_start(args, words[0]))


def spec_of(args: argparse.Namespace, url: str) -> dict[str, Any]:
    """The crawl the command line asks for: ``url``, and each crawl field given as a flag."""
    return {"url": url, **request_fields(args, CrawlIn.model_fields)}


async def _start(args: argparse.Namespace, url: str) -> int:
    async with ApiClient(args.api, api_key_from_env()) as api:
        try:
            crawl = await api.start_crawl(spec_of(args, url))
        except ApiError as exc:
            fail(str(exc))
            return EXIT_ERROR
        if not args.wait:
            show(crawl, args)
            return EXIT_OK
        err().print(f"Crawl {crawl['id']} started at {crawl['url']}.")
        started = time.monotonic()
        try:
            crawl = await wait(api, crawl, args, err())
        except ApiError as exc:
            fail(f"{exc} (while waiting; the crawl goes on on the server)")
            return EXIT_ERROR
    show(crawl, args)
    if crawl["status"] == "RUNNING":
        fail(
            f"stopped waiting after {duration(time.monotonic() - started)}: the crawl goes on "
            f"on the server (`taskcrawler crawl status {crawl['id']}`)"
        )
        return EXIT_JOBS_FAILED
    return EXIT_OK if crawl["status"] == "COMPLETED" else EXIT_JOBS_FAILED


async def _act(args: argparse.Namespace, action: str, crawl_id: str) -> int:
    async with ApiClient(args.api, api_key_from_env()) as api:
        try:
            full_id = await ids.crawl_id(api, crawl_id)
            if action == "status":
                crawl = await api.get_crawl(full_id)
            else:
                crawl = await api.cancel_crawl(full_id)
        except ApiError as exc:
            fail(str(exc))
            return EXIT_ERROR
    show(crawl, args)
    return EXIT_OK


def show(crawl: Crawl, args: argparse.Namespace) -> None:
    if args.json:
        print_json(crawl)
        return
    table = Table(title=f"Crawl {crawl['id']}", title_justify="left", show_header=False)
    table.add_column(style="bold")
    table.add_column()
    table.add_row("url", str(crawl["url"]))
    table.add_row("status", status_text(str(crawl["status"])))
    for name in ("discovered", "pending", "processing", "completed", "failed", "cancelled"):
        table.add_row(name, f"{int(crawl[name]):,}")
    table.add_row("created", str(crawl["created_at"]))
    table.add_row("finished", str(crawl.get("finished_at") or "-"))
    out().print(table)


def _done(crawl: Crawl) -> int:
    return int(crawl["completed"]) + int(crawl["failed"]) + int(crawl["cancelled"])


class Tracker:
    """A live bar over the pages discovered so far (the total grows as the crawl finds more)."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.last_line = 0.0
        self.progress: Progress | None = None
        self.task: TaskID | None = None
        if console.is_terminal:
            self.progress = Progress(
                SpinnerColumn(),
                TextColumn("[bold]pages"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("[red]{task.fields[failed]} failed"),
                TimeElapsedColumn(),
                console=console,
            )
            self.task = self.progress.add_task("crawl", total=1, failed=0)
            self.progress.start()

    def update(self, crawl: Crawl, *, final: bool = False) -> None:
        done, total = _done(crawl), int(crawl["discovered"])
        if self.progress is not None and self.task is not None:
            self.progress.update(self.task, completed=done, total=total, failed=crawl["failed"])
            return
        now = time.monotonic()
        if final or now - self.last_line >= PLAIN_PROGRESS_SECONDS:
            self.last_line = now
            self.console.print(
                f"progress: {done:,}/{total:,} pages done, {int(crawl['failed']):,} failed",
                soft_wrap=True,
            )

    def stop(self) -> None:
        if self.progress is not None:
            self.progress.stop()


async def wait(api: ApiClient, crawl: Crawl, args: argparse.Namespace, console: Console) -> Crawl:
    """Poll until the crawl is no longer RUNNING or ``--timeout`` passed; its last state."""
    deadline = time.monotonic() + args.timeout if args.timeout else None
    tracker = Tracker(console)
    trouble_since: float | None = None
    try:
        tracker.update(crawl)
        while crawl["status"] == "RUNNING":
            interval = args.interval
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return crawl
                interval = min(interval, left)
            await asyncio.sleep(interval)
            try:
                crawl = await api.get_crawl(str(crawl["id"]))
                trouble_since = None
            except ApiError as exc:
                if not exc.transient:
                    raise
                trouble_since = trouble_since or time.monotonic()
                if time.monotonic() - trouble_since > GIVE_UP_AFTER_SECONDS:
                    raise
            tracker.update(crawl)
        return crawl
    finally:
        tracker.update(crawl, final=True)
        tracker.stop()
