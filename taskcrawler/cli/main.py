"""``taskcrawler serve | api | worker | migrate | scrape`` — one entry point, ``--help`` on each.

Every option has an environment variable (``TASKCRAWLER_*``, see the README); flags win.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import logging
import signal
import sys
from collections.abc import Iterator, Sequence
from types import FrameType
from typing import Any

from taskcrawler import __version__
from taskcrawler.cli.commands import add_client_commands
from taskcrawler.cli.keys import add_keys_parser
from taskcrawler.cli.logs import configure_logging
from taskcrawler.cli.loop import run_async
from taskcrawler.settings import Settings, get_settings

log = logging.getLogger(__name__)

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


# --- commands -------------------------------------------------------------------------------


def freeze_startup_heap() -> None:
    """Put what start-up built (modules, classes, the app) out of the garbage collector's reach.

    A full collection walks every tracked object; with FastAPI, SQLAlchemy and pydantic loaded
    those walks paused a process 100-190 ms now and then (seen with ``gc.callbacks`` at 500
    POST/s), which is most of the API's p99. Frozen objects are never walked again.
    """
    gc.collect()
    gc.freeze()


def cmd_serve(settings: Settings, args: argparse.Namespace) -> int:
    """The API, and a worker in a child process it supervises; migrates the database first."""
    from taskcrawler.storage import upgrade_database

    if refused := _refuse_open_bind(settings, args):
        return refused
    run_async(upgrade_database(settings.database_url))
    return _run_api(settings, worker_process=True)


def cmd_api(settings: Settings, args: argparse.Namespace) -> int:
    return _refuse_open_bind(settings, args) or _run_api(settings, worker_process=False)


def _refuse_open_bind(settings: Settings, args: argparse.Namespace) -> int:
    """An open API on a reachable address lets anyone make this machine fetch URLs for them."""
    if settings.host in LOOPBACK_HOSTS or settings.auth_required or args.insecure:
        return 0
    sys.stderr.write(
        f"refusing to serve on {settings.host} without authentication: anyone who can reach it "
        "could make this machine fetch URLs. Set TASKCRAWLER_AUTH_REQUIRED=true (and create a "
        "key with `taskcrawler keys create --name NAME --admin`), or pass --insecure.\n"
    )
    return 2


def _run_api(settings: Settings, *, worker_process: bool) -> int:
    import uvicorn

    from taskcrawler.api import create_app

    app = create_app(settings, worker_process=worker_process)
    freeze_startup_heap()
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        loop="auto",
        http="auto",
        access_log=False,
        # The peer's address is the one failed logins are counted against: X-Forwarded-For is
        # the client's to write, and would let a flood name a new address on every request.
        proxy_headers=False,
        log_config=None,
        timeout_graceful_shutdown=int(settings.shutdown_grace_seconds) + 5,
    )
    with _sigterm_exits_normally():
        uvicorn.Server(config).run()
    return 0


class _Terminated(BaseException):
    """SIGTERM, turned into an exception so that the process ends through Python's own exit."""


@contextlib.contextmanager
def _sigterm_exits_normally() -> Iterator[None]:
    """Leave through a normal interpreter exit when SIGTERM stopped the server.

    uvicorn shuts down gracefully on SIGTERM, then restores the handler it found and raises the
    signal again. With the default handler that kills the process on the spot: no atexit hooks,
    no multiprocessing finalizers, so the named semaphores of a process pool's queues (the
    worker's parse child, under ``serve``) are never unlinked and the resource tracker reports
    them leaked. Found here instead, the signal raises :class:`_Terminated`, and the process
    exits 0 after a clean shutdown, as ``taskcrawler worker`` does.
    """

    def terminated(signum: int, frame: FrameType | None) -> None:
        raise _Terminated

    previous = signal.signal(signal.SIGTERM, terminated)
    try:
        yield
    except _Terminated:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)


def cmd_worker(settings: Settings, args: argparse.Namespace) -> int:
    from taskcrawler.bootstrap import worker_processes
    from taskcrawler.running import run_worker
    from taskcrawler.worker.runner import collect_less_often, lower_priority

    supervisor = worker_processes(settings)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        if supervisor is None:
            lower_priority(settings.worker_nice)
            collect_less_often()
            await run_worker(settings, stop=stop, serve_metrics_port=True)
            return
        await supervisor.start()
        log.info("%d worker processes started: %s", supervisor.count, supervisor.pids)
        try:
            await stop.wait()
        finally:
            await supervisor.stop()

    freeze_startup_heap()
    run_async(main())
    return 0


def cmd_migrate(settings: Settings, args: argparse.Namespace) -> int:
    from taskcrawler.storage import upgrade_database

    run_async(upgrade_database(settings.database_url, args.revision))
    sys.stdout.write(f"database at revision {args.revision}: {_redacted(settings.database_url)}\n")
    return 0


def cmd_scrape(settings: Settings, args: argparse.Namespace) -> int:
    import orjson

    from taskcrawler.bootstrap import standalone_fetcher
    from taskcrawler.domain import InvalidURL, validate_url
    from taskcrawler.domain.jobs import DEFAULT_FORMATS
    from taskcrawler.service.scrape import scrape_once

    try:
        validate_url(args.url)
    except InvalidURL as exc:
        sys.stderr.write(f"taskcrawler scrape: {exc}\n")
        return 2
    formats = ("metadata", *dict.fromkeys(args.format)) if args.format else DEFAULT_FORMATS
    result = run_async(scrape_once(standalone_fetcher(settings), args.url, formats))
    sys.stdout.write(orjson.dumps(result, option=orjson.OPT_INDENT_2).decode() + "\n")
    return 0 if result.get("error_code") is None else 1


def cmd_map(settings: Settings, args: argparse.Namespace) -> int:
    import orjson

    from taskcrawler.bootstrap import standalone_fetcher
    from taskcrawler.domain.crawls import InvalidCrawlSpec
    from taskcrawler.service.mapping import MapRefused, map_once

    try:
        result = run_async(
            map_once(
                standalone_fetcher(settings),
                settings,
                args.url,
                limit=args.limit,
                search=args.search,
                sitemap=args.sitemap,
                allow_subdomains=args.subdomains,
            )
        )
    except (InvalidCrawlSpec, MapRefused) as exc:
        sys.stderr.write(f"taskcrawler map: {exc}\n")
        return 2
    if args.json:
        body = {"links": result.links, "warnings": result.warnings}
        sys.stdout.write(orjson.dumps(body, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        sys.stdout.write("".join(f"{link}\n" for link in result.links))
        for warning in result.warnings:
            sys.stderr.write(f"warning: {warning}\n")
    return 0


def cmd_reextract(settings: Settings, args: argparse.Namespace) -> int:
    from taskcrawler.bootstrap import chunking_config, page_parser, storage_only
    from taskcrawler.service.reextract import Rechunking, ReextractCounts, reextract_all

    async def main() -> ReextractCounts:
        parser = page_parser(settings)
        try:
            async with storage_only(settings, pool_size=2) as storage:
                rechunking = Rechunking(storage.chunks, chunking_config(settings))
                return await reextract_all(storage.content, parser, rechunking=rechunking)
        finally:
            await parser.aclose()

    done = run_async(main())
    sys.stdout.write(f"re-extracted {done.pages} archived pages\n")
    if done.rechunked:
        sys.stdout.write(
            f"made the chunks of {done.rechunked} pages again: run `taskcrawler reindex` to"
            " embed them (until then a semantic search does not find them)\n"
        )
    return 0


def cmd_reindex(settings: Settings, args: argparse.Namespace) -> int:
    from taskcrawler import bootstrap
    from taskcrawler.domain.errors import VectorsUnavailable
    from taskcrawler.embed import EmbeddingFailed
    from taskcrawler.service.reindex import reindex_chunks

    embedder = bootstrap.embedder(settings)

    async def main() -> int:
        try:
            async with bootstrap.storage_only(settings, pool_size=2) as storage:
                return await reindex_chunks(storage.chunks, embedder)
        finally:
            await embedder.close()

    try:
        done = run_async(main())
    except (VectorsUnavailable, EmbeddingFailed) as exc:
        sys.stderr.write(f"taskcrawler reindex: {exc}\n")
        return 2
    sys.stdout.write(f"re-embedded {done} chunks with {embedder.model}\n")
    return 0


def _redacted(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


# --- parser ---------------------------------------------------------------------------------


def _add_bind_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", help="address to bind (TASKCRAWLER_HOST, default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port to bind (TASKCRAWLER_PORT, default 8000)")
    parser.add_argument(
        "--insecure",
        action="store_true",
        help="allow a non-loopback address without TASKCRAWLER_AUTH_REQUIRED=true",
    )


def _add_worker_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--concurrency",
        type=int,
        help="fetches in flight (TASKCRAWLER_WORKER_CONCURRENCY, default 100)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="taskcrawler",
        description="Asynchronous web-scraping job service. Configure it with TASKCRAWLER_* "
        "environment variables or a .env file (see the README); flags override them.",
    )
    parser.add_argument("--version", action="version", version=f"taskcrawler {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = sub.add_parser(
        "serve",
        help="the API and its worker process (embedded mode: zero configuration)",
        description="Run the API and, in a child process it restarts if it dies, a worker. With "
        "no configuration it uses SQLite (./taskcrawler.db), passes job ids to the worker over "
        "a socket, and migrates the database first.",
    )
    _add_bind_options(serve)
    _add_worker_options(serve)
    serve.set_defaults(func=cmd_serve)

    api = sub.add_parser(
        "api",
        help="the HTTP API alone (production: run workers separately)",
        description="Run the HTTP API. Workers run as separate `taskcrawler worker` processes.",
    )
    _add_bind_options(api)
    api.set_defaults(func=cmd_api)

    worker = sub.add_parser(
        "worker",
        help="a worker process (run as many as you like, on any machines)",
        description="Fetch and extract jobs from the queue until SIGTERM/SIGINT, then finish "
        "in-flight jobs within TASKCRAWLER_SHUTDOWN_GRACE_SECONDS and hand back the rest.",
    )
    _add_worker_options(worker)
    worker.add_argument(
        "--processes",
        type=int,
        help="worker processes, each with its own event loop; 0: one per core "
        "(TASKCRAWLER_WORKER_PROCESSES, default 0)",
    )
    worker.add_argument(
        "--metrics-port",
        type=int,
        help="port of this worker's /metrics, 0 disables; with several processes, the n-th "
        "serves on this port + n (TASKCRAWLER_WORKER_METRICS_PORT, default 9100)",
    )
    worker.set_defaults(func=cmd_worker)

    migrate = sub.add_parser(
        "migrate",
        help="create or upgrade the database schema",
        description="Apply the Alembic migrations to TASKCRAWLER_DATABASE_URL.",
    )
    migrate.add_argument("revision", nargs="?", default="head", help="target (default: head)")
    migrate.set_defaults(func=cmd_migrate)

    reextract = sub.add_parser(
        "reextract",
        help="rebuild every result from the stored raw pages (no fetching)",
        description="Run extraction again on every archived page (TASKCRAWLER_ARCHIVE_PAGES) "
        "and replace the stored results: use it after upgrading TaskCrawler's extractor. A page "
        "with chunks (or scraped with them but left none by an empty Markdown) gets them made "
        "again from its new Markdown, not embedded: run `taskcrawler "
        "reindex` next, for semantic and hybrid searches to find those pages by meaning again.",
    )
    reextract.set_defaults(func=cmd_reextract)

    reindex = sub.add_parser(
        "reindex",
        help="embed stored chunks again with the current embedder (after changing it)",
        description="Embed again every stored chunk that another model embedded, with "
        "TASKCRAWLER_EMBEDDER's model: searches compare only vectors of one model, so run it "
        "after changing the embedder or its model. Chunks stored before chunks carried their "
        "context (their page's title and headings) gain it, embedded and indexed. On "
        "PostgreSQL it also enables pgvector (extension, column, HNSW index) when the server "
        "has it.",
    )
    reindex.set_defaults(func=cmd_reindex)

    add_keys_parser(sub)

    scrape = sub.add_parser(
        "scrape",
        help="fetch and extract one URL now, print JSON (no database, no queue)",
        description="Fetch and extract one page in the foreground and print the result as JSON: "
        "its metadata and, by default, its main content as Markdown (the `markdown` field). "
        "Exits 1 if the fetch failed.",
    )
    scrape.add_argument("url", help="the http(s) URL to scrape")
    scrape.add_argument(
        "--format",
        action="append",
        default=[],
        choices=("markdown", "text", "html", "links"),
        help="what to print besides the metadata (may be repeated; default: markdown)",
    )
    scrape.set_defaults(func=cmd_scrape)

    site_map = sub.add_parser(
        "map",
        help="list a site's URLs from its sitemaps and start page, now (no database, no queue)",
        description="Fetch the start page and the site's sitemaps (robots.txt Sitemap: lines "
        "and /sitemap.xml, nested and gzipped) in the foreground and print the in-scope URLs, "
        "one per line, without scraping them. Same host as URL unless --subdomains. Warnings "
        "(a sitemap that could not be read, a cap reached) go to stderr. Exits 2 on bad input.",
    )
    site_map.add_argument("url", help="the site's start page (http or https)")
    site_map.add_argument("--search", help="keep the URLs containing every word of it")
    site_map.add_argument(
        "--limit",
        type=int,
        help="at most this many URLs (default 5000, at most TASKCRAWLER_MAP_MAX_LIMIT)",
    )
    site_map.add_argument(
        "--sitemap",
        choices=("include", "skip", "only"),
        default="include",
        help="include: sitemaps and links (default); skip: links only; only: sitemaps only",
    )
    site_map.add_argument(
        "--subdomains", action="store_true", help="subdomains of the site are in scope"
    )
    site_map.add_argument("--json", action="store_true", help='print {"links": [...], ...}')
    site_map.set_defaults(func=cmd_map)
    add_client_commands(sub)
    return parser


def _settings_from(args: argparse.Namespace) -> Settings:
    overrides: dict[str, Any] = {}
    for flag, field in (
        ("host", "host"),
        ("port", "port"),
        ("concurrency", "worker_concurrency"),
        ("metrics_port", "worker_metrics_port"),
        ("processes", "worker_processes"),
    ):
        value = getattr(args, flag, None)
        if value is not None:
            overrides[field] = value
    return get_settings(**overrides)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    settings = _settings_from(args)
    configure_logging(settings.log_format, settings.log_level)
    with contextlib.suppress(KeyboardInterrupt):
        code: int = args.func(settings, args)
        return code
    return 130
