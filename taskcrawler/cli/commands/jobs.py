"""``taskcrawler jobs list | show ID | retry ID | cancel ID… [filters]`` against a running API.

An ID may be the start of a job's id, as the tables show it (:mod:`taskcrawler.cli.ids`)."""

from __future__ import annotations

import argparse
from typing import Any

from rich.table import Table
from rich.text import Text

from taskcrawler.cli import ids
from taskcrawler.cli.client import MAX_PAGE, ApiClient, ApiError, Job, api_key_from_env
from taskcrawler.cli.commands import EXIT_ERROR, EXIT_OK
from taskcrawler.cli.commands.render import (
    duration,
    err,
    fail,
    jobs_table,
    local_time,
    out,
    print_json,
    seconds,
    status_text,
)
from taskcrawler.cli.loop import run_async
from taskcrawler.client import CancelFilter


def run(args: argparse.Namespace) -> int:
    return run_async(_run(args))


async def _run(args: argparse.Namespace) -> int:
    async with ApiClient(args.api, api_key_from_env()) as api:
        try:
            if args.action == "list":
                await list_jobs(api, args)
            elif args.action == "show":
                await show(api, args)
            elif args.action == "retry":
                job = await api.retry(await ids.job_id(api, args.job_id))
                report(job, args, f"is {job['status']} again, run {job.get('run_count', 0) + 1}")
            else:
                await cancel(api, args)
        except ApiError as exc:
            fail(str(exc))
            return EXIT_ERROR
    return EXIT_OK


async def list_jobs(api: ApiClient, args: argparse.Namespace) -> None:
    jobs: list[Job] = []
    cursor: str | None = args.cursor
    while len(jobs) < args.limit:
        page, cursor = await api.list_jobs(
            statuses=args.status,
            host=args.job_host,
            limit=min(MAX_PAGE, args.limit - len(jobs)),
            cursor=cursor,
        )
        jobs.extend(page)
        if not cursor or not page:  # an empty page leads nowhere: the server is astray
            break
    if args.json:
        print_json({"jobs": jobs, "next_cursor": cursor})
        return
    if not jobs:
        err().print("No jobs.")
        return
    out().print(jobs_table(jobs))
    if cursor:
        err().print(f"More: taskcrawler jobs list --cursor {cursor}", soft_wrap=True)


async def cancel(api: ApiClient, args: argparse.Namespace) -> None:
    """One id: that job (refused when it is finished). Several, or a filter: every unfinished
    job that matches."""
    filtered = any(
        (
            args.batch,
            args.crawl,
            args.status,
            args.job_host,
            args.created_after,
            args.created_before,
        )
    )
    if len(args.job_ids) == 1 and not filtered:
        job = await api.cancel(await ids.job_id(api, args.job_ids[0]))
        report(job, args, f"is {job['status']}")
        return
    if not args.job_ids and not filtered:
        raise ApiError(
            "give job ids, or a filter: --batch, --crawl, --status, --host, --created-after, "
            "--created-before",
            status=400,
        )
    where = CancelFilter(
        ids=[await ids.job_id(api, given) for given in args.job_ids],
        statuses=args.status,
        host=args.job_host,
        created_after=args.created_after,
        created_before=args.created_before,
    )
    if args.batch:
        where["batch_id"] = args.batch
    if args.crawl:
        where["crawl_id"] = await ids.crawl_id(api, args.crawl)
    answer = await api.cancel_matching(**where)
    if args.json:
        print_json(answer)
        return
    shown = ids.short_ids(answer["ids"])
    listed = " ".join(shown[job_id] for job_id in answer["ids"])
    out().print(
        Text(f"Cancelled {answer['cancelled']} jobs" + (f": {listed}" if listed else ".")),
        soft_wrap=True,
    )
    if answer["more"]:
        err().print("More jobs match: run the same command again to cancel the next ones.")


async def show(api: ApiClient, args: argparse.Namespace) -> None:
    job_id = await ids.job_id(api, args.job_id)
    job = await api.get_job(job_id)
    runs = await api.runs(job_id) if job.get("run_count") else []
    if args.json:
        print_json({**job, "runs": runs})
        return
    console = out()
    table = Table(show_header=False, title=f"Job {job['id']}", title_justify="left", box=None)
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    rows: list[tuple[str, Any]] = [
        ("status", status_text(job["status"])),
        ("url", job["url"]),
        ("final url", job.get("final_url")),
        ("title", job.get("scraped_title")),
        ("http status", job.get("http_status")),
        ("content type", job.get("content_type")),
        ("retries", job.get("retry_count")),
        ("earlier runs", job.get("run_count")),
        ("formats", ", ".join(job.get("formats") or [])),
        ("created", local_time(job.get("created_at"))),
        ("last attempt started", local_time(job.get("started_at"))),
        ("finished", local_time(job.get("finished_at"))),
        ("next attempt", local_time(job.get("next_attempt_at"))),
        ("took", duration(seconds(job.get("created_at"), job.get("finished_at")))),
        ("error", Text(job["error_log"], style="red") if job.get("error_log") else None),
    ]
    for name, value in rows:
        if value is None or value == "" or value == "-":
            continue
        table.add_row(name, value if isinstance(value, Text) else Text(str(value)))
    console.print(table)
    if runs:
        history = Table(title="Earlier runs", title_justify="left", header_style="bold")
        for column in ("RUN", "STATUS", "HTTP", "RETRIES", "TITLE / ERROR", "FINISHED"):
            history.add_column(column)
        for past in runs:
            history.add_row(
                str(past["run"]),
                status_text(past["status"]),
                str(past.get("http_status") or "-"),
                str(past.get("retry_count")),
                Text(past.get("error_log") or past.get("scraped_title") or ""),
                local_time(past.get("finished_at")),
            )
        console.print(history)


def report(job: Job, args: argparse.Namespace, what: str) -> None:
    if args.json:
        print_json(job)
    else:
        out().print(Text(f"Job {job['id']} {what}: {job['url']}"), soft_wrap=True)
