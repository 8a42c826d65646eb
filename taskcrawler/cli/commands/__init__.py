"""Client commands: ``taskcrawler submit`` and ``taskcrawler jobs list|show|retry|cancel``.

They talk to a running API (``--api``, default http://127.0.0.1:8000) with the key in
``TASKCRAWLER_API_KEY``. This module only builds their parsers, so ``taskcrawler --help`` stays
fast; the work (httpx, rich) is imported when a command runs.

Exit codes: 0 success; 1 some submitted jobs failed, were cancelled or did not finish in time;
2 bad input or the API refused or could not be reached (one line on stderr says why).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from taskcrawler.domain.jobs import JobStatus

if TYPE_CHECKING:
    from taskcrawler.settings import Settings

# Here, not in client.py, so that building the parser imports neither httpx nor rich.
API_KEY_ENV = "TASKCRAWLER_API_KEY"
DEFAULT_API = "http://127.0.0.1:8000"
MAX_BATCH = 1000  # the batch endpoint's limit
STATUSES = tuple(status.value for status in JobStatus)
EXIT_OK = 0
EXIT_JOBS_FAILED = 1
EXIT_ERROR = 2

# argparse's subparsers object has no public type.
Subparsers = Any


def _positive(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, not {text}")
    return value


def _count(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, not {text}")
    return value


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


def cmd_submit(settings: Settings, args: argparse.Namespace) -> int:
    from taskcrawler.cli.commands.submit import run

    return run(args)


def cmd_jobs(settings: Settings, args: argparse.Namespace) -> int:
    from taskcrawler.cli.commands.jobs import run

    return run(args)


def cmd_export(settings: Settings, args: argparse.Namespace) -> int:
    from taskcrawler.cli.commands.export import run

    return run(args)


def cmd_mcp(settings: Settings, args: argparse.Namespace) -> int:
    from taskcrawler.cli.client import api_key_from_env
    from taskcrawler.cli.main import run_async
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
    submit.set_defaults(func=cmd_submit)

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
    show.add_argument("job_id", metavar="ID", help="the job's id")
    _add_api_options(show)

    retry = actions.add_parser(
        "retry",
        help="re-run a finished job (same id, a new run)",
        description="Re-run a finished job: it becomes PENDING again, with a new run.",
    )
    retry.add_argument("job_id", metavar="ID", help="the job's id")
    _add_api_options(retry)

    cancel = actions.add_parser(
        "cancel", help="cancel a pending job", description="Cancel a job that has not started."
    )
    cancel.add_argument("job_id", metavar="ID", help="the job's id")
    _add_api_options(cancel)

    jobs.set_defaults(func=cmd_jobs)

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
    export.set_defaults(func=cmd_export)

    mcp = sub.add_parser(
        "mcp",
        help="a Model Context Protocol server on stdin/stdout, with tools for AI agents",
        description="Serve the tools scrape, map and get_job over MCP on standard input and "
        "output, for an agent that starts it (Claude Desktop, Cursor, …). The tools call a "
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
