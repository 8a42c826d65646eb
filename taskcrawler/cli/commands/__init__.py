"""Client commands: ``taskcrawler submit``, ``taskcrawler jobs list|show|retry|cancel`` and
``taskcrawler crawl URL | status ID | cancel ID``.

They talk to a running API (``--api``, default http://127.0.0.1:8000) with the key in
``TASKCRAWLER_API_KEY``. This module only builds their parsers, so ``taskcrawler --help`` stays
fast; the work (httpx, rich) is imported when a command runs.

Exit codes: 0 success; 1 some submitted jobs failed, were cancelled or did not finish in time;
2 bad input or the API refused or could not be reached (one line on stderr says why).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Collection
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args

from taskcrawler.domain.jobs import JobStatus
from taskcrawler.domain.rendering import RenderMode

if TYPE_CHECKING:
    from taskcrawler.settings import Settings

# Here, not in client.py, so that building the parser imports neither httpx nor rich.
API_KEY_ENV = "TASKCRAWLER_API_KEY"
DEFAULT_API = "http://127.0.0.1:8000"
MAX_BATCH = 1000  # the batch endpoint's limit
STATUSES = tuple(status.value for status in JobStatus)
#: What a job, a crawl's page or a monitor's page may extract (the API's formats).
FORMATS = ("metadata", "markdown", "text", "html", "links", "chunks", "screenshot")
#: What a new job or crawl extracts when no --format is given (the API's default).
DEFAULT_FORMATS_HELP = "default: metadata and markdown"
EXIT_OK = 0
EXIT_JOBS_FAILED = 1
EXIT_ERROR = 2

# argparse's subparsers object has no public type.
Subparsers = Any


def api_key_from_env() -> str | None:
    return os.environ.get(API_KEY_ENV, "").strip() or None


def _positive(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, not {text}")
    return value


def _seconds(text: str) -> float:
    value = float(text)
    if not value >= 0:  # NaN too
        raise argparse.ArgumentTypeError(f"must be >= 0, not {text}")
    return value


def _count(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, not {text}")
    return value


def request_fields(args: argparse.Namespace, fields: Collection[str]) -> dict[str, Any]:
    """The fields of a request that the command line gave: each flag whose ``dest`` is the
    name of one of ``fields`` (the API's request model's), unless it was left out (None, no
    value of a repeated flag, a switch not set). A flag so named is sent without being listed
    again."""
    given = {name: getattr(args, name, None) for name in fields}
    return {
        name: value
        for name, value in given.items()
        if value is not None and value is not False and value != []
    }


def _add_api_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--api",
        default=DEFAULT_API,
        metavar="URL",
        help=f"address of a running TaskCrawler API (default {DEFAULT_API}); "
        f"the key, if it needs one, is read from {API_KEY_ENV}",
    )
    parser.add_argument(
        "--json", action="store_true", help="print JSON instead of tables (for scripts)"
    )


def _runs(module: str) -> Callable[[Settings, argparse.Namespace], int]:
    """A command whose work is ``taskcrawler.cli.commands.<module>.run(args)``, imported only
    when the command runs."""

    def command(settings: Settings, args: argparse.Namespace) -> int:
        run: Callable[[argparse.Namespace], int] = import_module(
            f"taskcrawler.cli.commands.{module}"
        ).run
        return run(args)

    return command


def cmd_mcp(settings: Settings, args: argparse.Namespace) -> int:
    from taskcrawler.cli.loop import run_async
    from taskcrawler.mcp_server.stdio import serve_stdio

    run_async(serve_stdio(args.api, api_key_from_env()))
    return EXIT_OK


def add_client_commands(sub: Subparsers) -> None:
    """Add ``submit``, ``jobs`` and ``export`` to the ``taskcrawler`` parser's subcommands."""
    submit = sub.add_parser(
        "submit",
        help="submit URLs to a running API; --wait shows progress until they finish",
        description="Submit URLs (arguments, or --file with one per line) to a running API, "
        f"in batches of {MAX_BATCH:,}. Without --wait, print each job's id, status and URL. "
        "With --wait, show a live progress bar (done, failed, rate, ETA) until every job has "
        "finished, then a summary; exit 0 if all completed, 1 if any failed.",
    )
    submit.add_argument("urls", nargs="*", metavar="URL", help="http(s) URLs to scrape")
    submit.add_argument(
        "-f",
        "--file",
        action="append",
        default=[],
        metavar="FILE",
        help="read URLs from FILE, one per line; blank lines and #comments are skipped; "
        "'-' is standard input (may be repeated)",
    )
    submit.add_argument(
        "-w", "--wait", action="store_true", help="wait for the jobs, with a progress bar"
    )
    submit.add_argument(
        "--format",
        dest="formats",
        action="append",
        default=[],
        choices=FORMATS,
        help="what to extract of every page (may be repeated; "
        f"{DEFAULT_FORMATS_HELP}); a URL that already has a job gains the formats it lacks",
    )
    submit.add_argument(
        "--max-age",
        type=_seconds,
        metavar="SECONDS",
        help="fetch again the pages of jobs fetched longer ago than this (0: every one; "
        "default: a URL's job is answered as it is)",
    )
    submit.add_argument(
        "--render",
        choices=get_args(RenderMode),
        help="render the pages in a headless browser: auto renders app shells only "
        "(default: never, or always for --format screenshot)",
    )
    submit.add_argument(
        "--timeout",
        type=_positive,
        metavar="SECONDS",
        help="with --wait: stop waiting after this long (exit 1 if jobs are unfinished)",
    )
    submit.add_argument(
        "--interval",
        type=_positive,
        default=0.5,
        metavar="SECONDS",
        help="with --wait: how often to ask the API (default 0.5)",
    )
    _add_api_options(submit)
    submit.set_defaults(func=_runs("submit"))

    jobs = sub.add_parser(
        "jobs",
        help="list, show, retry or cancel jobs on a running API",
        description="Look at and manage the jobs of a running API.",
    )
    actions = jobs.add_subparsers(dest="action", required=True, metavar="ACTION")

    listing = actions.add_parser(
        "list", help="jobs, newest first", description="Jobs, newest first."
    )
    listing.add_argument(
        "-s",
        "--status",
        action="append",
        choices=STATUSES,
        type=str.upper,
        default=[],
        help="only jobs in this status (may be repeated)",
    )
    listing.add_argument("--host", dest="job_host", metavar="HOST", help="only jobs of this host")
    listing.add_argument(
        "-n", "--limit", type=_count, default=20, help="how many jobs at most (default 20)"
    )
    listing.add_argument("--cursor", help="continue after an earlier page (printed at its end)")
    _add_api_options(listing)

    show = actions.add_parser(
        "show", help="one job: status, timings, error, runs", description="Show one job."
    )
    show.add_argument("job_id", metavar="ID", help="the job's id, or its start (a short id)")
    _add_api_options(show)

    retry = actions.add_parser(
        "retry",
        help="re-run a finished job (same id, a new run)",
        description="Re-run a finished job: it becomes PENDING again, with a new run.",
    )
    retry.add_argument("job_id", metavar="ID", help="the job's id, or its start (a short id)")
    _add_api_options(retry)

    cancel = actions.add_parser(
        "cancel",
        help="cancel jobs not finished yet: by id, or every one a filter matches",
        description="Cancel jobs that are not finished yet (PENDING, or PROCESSING: what their "
        "worker fetches is dropped). One ID cancels that job; several IDs or any filter "
        "cancel every unfinished job that matches them all, each atomically.",
    )
    cancel.add_argument(
        "job_ids", metavar="ID", nargs="*", help="jobs' ids, or their starts (short ids)"
    )
    cancel.add_argument("--batch", metavar="ID", help="the jobs of this batch scrape")
    cancel.add_argument("--crawl", metavar="ID", help="the pages of this crawl (or its start)")
    cancel.add_argument(
        "-s",
        "--status",
        action="append",
        choices=("PENDING", "PROCESSING"),
        type=str.upper,
        default=[],
        help="only jobs in this status (may be repeated; default both)",
    )
    cancel.add_argument("--host", dest="job_host", metavar="HOST", help="only jobs of this host")
    cancel.add_argument(
        "--created-after", metavar="TIME", help="only jobs created after this ISO 8601 time"
    )
    cancel.add_argument(
        "--created-before", metavar="TIME", help="only jobs created before this ISO 8601 time"
    )
    _add_api_options(cancel)

    jobs.set_defaults(func=_runs("jobs"))

    search = sub.add_parser(
        "search",
        help="search your scraped pages' chunks on a running API",
        description="Search the chunks of your pages scraped with formats chunks: by meaning "
        "(semantic), by words (keyword) or both (hybrid, the default). Prints the best chunks "
        "with their page, best first.",
    )
    search.add_argument("query", help="what to look for, in your own words")
    search.add_argument("-k", type=_count, default=5, help="how many chunks (default 5)")
    search.add_argument(
        "--mode", choices=("hybrid", "semantic", "keyword"), default="hybrid", help="default hybrid"
    )
    search.add_argument("--crawl", dest="crawl_id", metavar="ID", help="only this crawl's pages")
    search.add_argument("--host", help="only this host's pages")
    search.add_argument("--url-prefix", metavar="URL", help="only the pages under this URL")
    search.add_argument("--monitor", dest="monitor_id", metavar="ID", help="only its pages")
    search.add_argument(
        "--fetched-after", metavar="TIME", help="only pages fetched since (ISO 8601, with zone)"
    )
    search.add_argument("--fetched-before", metavar="TIME", help="only pages fetched before")
    search.add_argument(
        "--no-rerank", dest="rerank", action="store_false", help="skip the server's reranker"
    )
    _add_api_options(search)
    search.set_defaults(func=_runs("search"))
    _add_crawl_command(sub)


def _add_crawl_command(sub: Subparsers) -> None:
    crawl = sub.add_parser(
        "crawl",
        help="crawl a site on a running API; --wait shows progress until it ends",
        description="crawl URL: start a crawl of the site of URL and print it; with --wait, "
        "show a live progress bar until it ends, then its counts (exit 0 if COMPLETED). "
        "crawl status ID: show a crawl and its counts. crawl cancel ID: cancel it.",
    )
    crawl.add_argument(
        "target",
        nargs="+",
        metavar="TARGET",
        help="the start URL (http or https); or status ID; or cancel ID",
    )
    crawl.add_argument("--limit", type=_count, help="pages at most (default 10,000)")
    crawl.add_argument(
        "--max-depth", type=int, metavar="N", help="link hops from the start page at most"
    )
    crawl.add_argument(
        "--include",
        dest="include_paths",
        action="append",
        default=[],
        metavar="REGEX",
        help="only paths matching one of these RE2 patterns (may be repeated)",
    )
    crawl.add_argument(
        "--exclude",
        dest="exclude_paths",
        action="append",
        default=[],
        metavar="REGEX",
        help="leave out paths matching one of these RE2 patterns (may be repeated)",
    )
    crawl.add_argument(
        "--sitemap",
        # Written out: the parser does not import the crawl domain (and RE2) to be built; a
        # test holds them to the API's.
        choices=("include", "skip", "only"),
        default="include",
        help="include: sitemaps and links (default); skip: links only; only: sitemaps only",
    )
    crawl.add_argument(
        "--allow-subdomains", action="store_true", help="subdomains of the site are in scope"
    )
    crawl.add_argument(
        "--format",
        dest="formats",
        action="append",
        default=[],
        choices=FORMATS,
        help=f"what to extract of every page (may be repeated; {DEFAULT_FORMATS_HELP})",
    )
    crawl.add_argument(
        "--render",
        choices=get_args(RenderMode),
        help="render every page in a headless browser: auto renders app shells only, whose "
        "links built in JavaScript are then followed (default: never)",
    )
    crawl.add_argument(
        "--max-age",
        type=_seconds,
        metavar="SECONDS",
        help="reuse the pages this key scraped more recently than this instead of fetching "
        "them (default: fetch every page)",
    )
    crawl.add_argument(
        "-w", "--wait", action="store_true", help="wait for the crawl, with a progress bar"
    )
    crawl.add_argument(
        "--timeout",
        type=_positive,
        metavar="SECONDS",
        help="with --wait: stop waiting after this long (exit 1; the crawl goes on)",
    )
    crawl.add_argument(
        "--interval",
        type=_positive,
        default=1.0,
        metavar="SECONDS",
        help="with --wait: how often to ask the API (default 1)",
    )
    _add_api_options(crawl)
    crawl.set_defaults(func=_runs("crawl"))
    _add_monitor_commands(sub)


def _add_monitor_commands(sub: Subparsers) -> None:
    monitor = sub.add_parser(
        "monitor",
        help="watch pages for changes on a running API: create, list, changes, pause, …",
        description="Monitors re-scrape pages on a schedule and report what changed, with a "
        "unified diff (docs/how-to/monitors.md).",
    )
    actions = monitor.add_subparsers(dest="action", required=True, metavar="ACTION")
    create = actions.add_parser(
        "create",
        help="watch URLs, or a site (--crawl)",
        description="Watch URLs, or a whole site with --crawl (then pages added and removed "
        "between runs are reported too); the first run starts at once.",
    )
    create.add_argument("urls", nargs="*", metavar="URL", help="http(s) URLs to watch")
    create.add_argument(
        "--crawl", metavar="URL", help="watch the site crawled from this start URL instead"
    )
    create.add_argument(
        "--limit", type=_count, metavar="N", help="with --crawl: at most N pages a run"
    )
    create.add_argument(
        "--max-depth", type=int, metavar="N", help="with --crawl: link hops at most"
    )
    create.add_argument(
        "-i",
        "--interval",
        type=_positive,
        required=True,
        metavar="SECONDS",
        help="seconds between runs (at least the API's minimum, 60 by default)",
    )
    create.add_argument(
        "--ignore",
        action="append",
        default=[],
        metavar="SELECTOR",
        help="a CSS selector of a part of the page that changes on every load (may be repeated)",
    )
    create.add_argument(
        "--format",
        action="append",
        default=[],
        choices=("metadata", "markdown", "text", "html", "links"),
        help=f"what each run's job keeps (may be repeated; {DEFAULT_FORMATS_HELP})",
    )
    create.add_argument(
        "--callback-url",
        metavar="URL",
        help="gets page.changed webhooks (and page.added / page.removed with --crawl)",
    )
    _add_api_options(create)

    listing = actions.add_parser("list", help="monitors, newest first", description="Monitors.")
    listing.add_argument(
        "-n", "--limit", type=_count, default=20, help="how many at most (default 20)"
    )
    listing.add_argument("--cursor", help="continue after an earlier page (printed at its end)")
    _add_api_options(listing)

    changes = actions.add_parser(
        "changes",
        help="a monitor's changes with their diffs, newest first",
        description="A monitor's changes, newest first, each with its unified diff.",
    )
    changes.add_argument(
        "monitor_id", metavar="ID", help="the monitor's id, or its start (a short id)"
    )
    changes.add_argument(
        "-n", "--limit", type=_count, default=20, help="how many at most (default 20)"
    )
    changes.add_argument("--cursor", help="continue after an earlier page (printed at its end)")
    _add_api_options(changes)

    for name, text in (
        ("pause", "stop running a monitor until it is resumed"),
        ("resume", "run a paused monitor again (a missed run fires once, now)"),
        ("delete", "delete a monitor, its jobs, their runs and its changes"),
    ):
        action = actions.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".")
        action.add_argument(
            "monitor_id", metavar="ID", help="the monitor's id, or its start (a short id)"
        )
        _add_api_options(action)
    monitor.set_defaults(func=_runs("monitors"))
    export = sub.add_parser(
        "export",
        help="write the finished jobs of a running API as JSON Lines or WARC, resumably",
        description="Stream every finished (COMPLETED or FAILED) job of your key that was not "
        "exported after --since: JSON Lines (the job and its texts, one a line) or WARC 1.1 "
        "(the raw responses kept by TASKCRAWLER_ARCHIVE_PAGES, one gzip member per record). "
        "The cursor to pass next time is printed on stderr, and kept in --cursor-file if given: "
        "run it again with the same file to get exactly what finished since, each job once.",
    )
    export.add_argument(
        "--format", choices=("jsonl", "warc"), default="jsonl", help="default jsonl"
    )
    export.add_argument("--since", metavar="CURSOR", help="resume after this cursor")
    export.add_argument(
        "--cursor-file",
        type=Path,
        metavar="FILE",
        help="read --since from FILE if it exists, and write the next cursor to it once the "
        "export is complete",
    )
    export.add_argument(
        "--limit", type=_count, help="at most this many jobs (the rest come next time)"
    )
    export.add_argument("--crawl", metavar="ID", help="only this crawl's pages")
    export.add_argument(
        "-o", "--output", type=Path, metavar="FILE", help="write to FILE, not standard output"
    )
    export.add_argument(
        "--api",
        default=DEFAULT_API,
        metavar="URL",
        help=f"address of a running TaskCrawler API (default {DEFAULT_API}); "
        f"the key, if it needs one, is read from {API_KEY_ENV}",
    )
    export.set_defaults(func=_runs("export"))

    mcp = sub.add_parser(
        "mcp",
        help="a Model Context Protocol server on stdin/stdout, with tools for AI agents",
        description="Serve the tools scrape, map, crawl, crawl_status, search and get_job over "
        "MCP on standard input and output, for an agent that starts it (Claude Desktop, "
        "Cursor, …). The tools call a "
        f"running TaskCrawler API (--api) with the key in {API_KEY_ENV}. The API serves the "
        "same tools over streamable HTTP at /mcp.",
    )
    mcp.add_argument(
        "--api",
        default=DEFAULT_API,
        metavar="URL",
        help=f"address of a running TaskCrawler API (default {DEFAULT_API})",
    )
    mcp.set_defaults(func=cmd_mcp)
