"""``taskcrawler monitor create | list | changes | pause | resume | delete`` against a running
API."""

from __future__ import annotations

import argparse
from typing import Any

from rich.table import Table
from rich.text import Text

from taskcrawler.cli import ids
from taskcrawler.cli.client import MAX_PAGE, ApiClient, ApiError, api_key_from_env
from taskcrawler.cli.commands import EXIT_ERROR, EXIT_OK
from taskcrawler.cli.commands.render import (
    err,
    fail,
    fit_widths,
    fitted_table,
    local_time,
    out,
    print_json,
)
from taskcrawler.cli.loop import run_async


def run(args: argparse.Namespace) -> int:
    return run_async(_run(args))


def _usage_error(args: argparse.Namespace) -> str | None:
    if args.action != "create":
        return None
    if bool(args.urls) == bool(args.crawl):
        return "give either URLs or --crawl URL"
    if not args.crawl and (args.limit is not None or args.max_depth is not None):
        return "--limit and --max-depth go with --crawl"
    return None


async def _run(args: argparse.Namespace) -> int:
    usage = _usage_error(args)
    if usage is not None:
        fail(usage)
        return EXIT_ERROR
    async with ApiClient(args.api, api_key_from_env()) as api:
        try:
            if args.action == "create":
                await create(api, args)
            elif args.action == "list":
                await list_monitors(api, args)
            elif args.action == "changes":
                await changes(api, args)
            elif args.action in ("pause", "resume"):
                monitor = await api.update_monitor(
                    await ids.monitor_id(api, args.monitor_id), {"paused": args.action == "pause"}
                )
                report(monitor, args)
            else:
                monitor_id = await ids.monitor_id(api, args.monitor_id)
                await api.delete_monitor(monitor_id)
                if args.json:
                    print_json({"id": monitor_id, "deleted": True})
                else:
                    out().print(f"{monitor_id} deleted")
        except ApiError as exc:
            fail(str(exc))
            return EXIT_ERROR
    return EXIT_OK


async def create(api: ApiClient, args: argparse.Namespace) -> None:
    body: dict[str, Any] = {"interval_seconds": args.interval}
    if args.crawl:
        crawl: dict[str, Any] = {"url": args.crawl}
        if args.limit is not None:
            crawl["limit"] = args.limit
        if args.max_depth is not None:
            crawl["max_depth"] = args.max_depth
        body["crawl"] = crawl
    else:
        body["urls"] = args.urls
    if args.ignore:
        body["ignore_selectors"] = args.ignore
    if args.callback_url:
        body["callback_url"] = args.callback_url
    if args.format:
        body["formats"] = args.format
    report(await api.create_monitor(body), args)


def report(monitor: dict[str, Any], args: argparse.Namespace) -> None:
    if args.json:
        print_json(monitor)
        return
    out().print(monitors_table([monitor]))


def monitors_table(monitors: list[dict[str, Any]]) -> Table:
    """One row a monitor, a line a page, fit to the console (80 columns and up): short ids
    (:mod:`taskcrawler.cli.ids`), URLs cut with an ellipsis."""
    shown = ids.short_ids(str(monitor["id"]) for monitor in monitors)
    rows = [
        [
            Text(shown[str(monitor["id"])]),
            Text(monitor["status"]),
            Text(f"{monitor['interval_seconds']:g} s"),
            Text(
                "\n".join(monitor["urls"]) or f"site: {(monitor.get('crawl') or {}).get('url', '')}"
            ),
            Text(str(monitor["rounds"])),
            Text(local_time(monitor.get("next_run_at"))),
        ]
        for monitor in monitors
    ]
    headers = ["ID", "STATUS", "EVERY", "PAGES", "ROUNDS", "NEXT RUN"]
    widths = fit_widths(headers, rows, {"PAGES": 1}, out().width)
    return fitted_table(headers, rows, widths, right=("EVERY", "ROUNDS"))


async def list_monitors(api: ApiClient, args: argparse.Namespace) -> None:
    found: list[dict[str, Any]] = []
    cursor: str | None = args.cursor
    while len(found) < args.limit:
        page, cursor = await api.list_monitors(
            limit=min(MAX_PAGE, args.limit - len(found)), cursor=cursor
        )
        found.extend(page)
        if not cursor or not page:  # an empty page leads nowhere: the server is astray
            break
    if args.json:
        print_json({"monitors": found, "next_cursor": cursor})
        return
    if not found:
        err().print("No monitors.")
        return
    out().print(monitors_table(found))
    if cursor:
        err().print(f"More: taskcrawler monitor list --cursor {cursor}", soft_wrap=True)


async def changes(api: ApiClient, args: argparse.Namespace) -> None:
    found, cursor = await api.changes(
        await ids.monitor_id(api, args.monitor_id),
        limit=min(MAX_PAGE, args.limit),
        cursor=args.cursor,
    )
    if args.json:
        print_json({"changes": found, "next_cursor": cursor})
        return
    if not found:
        err().print("No changes.")
        return
    console = out()
    for change in found:
        console.rule(f"{local_time(change['detected_at'])}  {change['kind']}  {change['url']}")
        if change.get("diff"):
            console.print(change["diff"], markup=False, highlight=False, soft_wrap=True)
        for name, values in (change.get("metadata") or {}).items():
            console.print(f"{name}: {values['old']!r} -> {values['new']!r}", markup=False)
    if cursor:
        err().print(
            f"More: taskcrawler monitor changes {args.monitor_id} --cursor {cursor}",
            soft_wrap=True,
        )
