"""``taskcrawler export``: the finished jobs of a running API, as JSON Lines or WARC, resumably."""

from __future__ import annotations

import argparse
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import BinaryIO

from taskcrawler.cli import ids
from taskcrawler.cli.client import ApiClient, ApiError, api_key_from_env
from taskcrawler.cli.commands import EXIT_ERROR, EXIT_OK
from taskcrawler.cli.loop import run_async
from taskcrawler.client import TaskCrawler, TaskCrawlerError


def run(args: argparse.Namespace) -> int:
    if args.crawl:
        try:
            args.crawl = run_async(_full_crawl_id(args))
        except ApiError as exc:
            sys.stderr.write(f"error: {exc}\n")
            return EXIT_ERROR
    state: Path | None = args.cursor_file
    since: str | None = args.since
    if since is None and state is not None and state.exists():
        since = state.read_text().strip() or None
    try:
        with ExitStack() as stack:
            out: BinaryIO = (
                stack.enter_context(args.output.open("wb")) if args.output else sys.stdout.buffer
            )
            tc = stack.enter_context(TaskCrawler(args.api, api_key_from_env()))
            next_since = tc.export_to(
                out, args.format, since=since, limit=args.limit, crawl_id=args.crawl
            )
    except TaskCrawlerError as exc:
        sys.stderr.write(f"error: {ApiError.of(exc)}\n")
        return EXIT_ERROR
    except OSError as exc:
        sys.stderr.write(f"error: cannot write {exc.filename or 'the output'}: {exc.strerror}\n")
        return EXIT_ERROR
    if state is not None:
        # Written only once the whole export was: an interrupted one is exported again.
        temporary = state.with_name(state.name + ".tmp")
        temporary.write_text(next_since + "\n")
        temporary.replace(state)
    sys.stderr.write(f"next: --since {next_since}\n")
    return EXIT_OK


async def _full_crawl_id(args: argparse.Namespace) -> str:
    """``--crawl`` may be the start of the crawl's id (a short id)."""
    async with ApiClient(args.api, api_key_from_env()) as api:
        return await ids.crawl_id(api, args.crawl)
