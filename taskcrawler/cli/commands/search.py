"""``taskcrawler search QUERY`` against a running API."""

from __future__ import annotations

import argparse

from rich.table import Table
from rich.text import Text

from taskcrawler.cli import ids
from taskcrawler.cli.client import ApiClient, ApiError, api_key_from_env
from taskcrawler.cli.commands import EXIT_ERROR, EXIT_OK
from taskcrawler.cli.commands.render import err, fail, out, print_json
from taskcrawler.cli.loop import run_async

#: Characters of a chunk shown in the table; --json prints them whole.
SHOWN_CHARS = 300


def run(args: argparse.Namespace) -> int:
    return run_async(_run(args))


async def _run(args: argparse.Namespace) -> int:
    async with ApiClient(args.api, api_key_from_env()) as api:
        try:
            results, legs = await api.search(
                args.query,
                k=args.k,
                mode=args.mode,
                crawl_id=await ids.crawl_id(api, args.crawl_id) if args.crawl_id else None,
                host=args.host,
                url_prefix=args.url_prefix,
                monitor_id=await ids.monitor_id(api, args.monitor_id) if args.monitor_id else None,
                fetched_after=args.fetched_after,
                fetched_before=args.fetched_before,
                rerank=args.rerank,
            )
        except ApiError as exc:
            fail(str(exc))
            return EXIT_ERROR
    if args.json:
        print_json({"results": results, "legs": legs})
        return EXIT_OK
    if args.mode == "hybrid" and "semantic" not in legs:
        # The API answered from its keyword ranking alone (its embedder failed or was late, or
        # no vectors are stored): whoever reads the table should know it is not the usual one.
        err().print(
            "note: ranked by keywords only: the query could not be embedded in time, "
            "or no page has vectors"
        )
    if not results:
        err().print("Nothing found.")
        return EXIT_OK
    table = Table(header_style="bold", show_lines=True)
    for column in ("SCORE", "PAGE", "TEXT"):
        table.add_column(column, overflow="fold")
    for found in results:
        text = found["text"]
        shown = text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "…"
        page = Text(found.get("title") or "")
        if found.get("heading_path"):
            page.append("\n" + " > ".join(found["heading_path"]))
        page.append(f"\n{found['url']} #{found['chunk_index']}", style="dim")
        table.add_row(f"{found['score']:.3f}", page, Text(shown))
    out().print(table)
    return EXIT_OK
