"""Rendering throughput and leaks of one worker's renderer: ``python -m bench.render``.

Renders ``--pages`` distinct pages of a local site (each an app shell that builds its text in
JavaScript from a JSON request, so every page costs a navigation, a script and a proxied XHR)
with ``--concurrency`` pages in flight, as one worker process would, and reports:

* rendered pages/s;
* chromium processes: sampled every 50 ms while rendering (the most seen) and, at the end, every
  process that carries the environment marker of any browser the run started (strays of
  recycled browsers included, zombies included);
* resident memory of the browser's process tree, of the Playwright driver and of this Python
  process, after the first 10% of the pages and at the end, both times with no page in flight
  (the most the browser held while rendering is sampled too).

With ``--actions`` every render also runs Firecrawl's page actions (:data:`ACTIONS`: a wait for
a selector, a click, a scroll, a script, a scrape, a viewport screenshot and a PDF) before the
page is taken, and the report adds actions/s.

The site runs in a child process so it does not share this process's event loop. Not a test:
figures depend on the machine; bench/RESULTS.md keeps the latest measured.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from aiohttp import web

SHELL = """<!doctype html><html><head><title>Item {n}</title></head><body>
<noscript>You need to enable JavaScript to run this app.</noscript><div id="root"></div>
<script>
fetch("/api/{n}").then(r => r.json()).then(d => {{
  const text = d.paragraphs.map(p => "<p>" + p + "</p>").join("");
  document.getElementById("root").innerHTML = "<main><h1>" + d.title + "</h1>" + text + "</main>";
}});
</script></body></html>"""
SENTENCE = "Rendered text number {n} was built by a script from a JSON answer of the local site."
#: The page actions of ``--actions``: one of each kind that does something to a shell's page.
ACTIONS: list[dict[str, object]] = [
    {"type": "wait", "selector": "main h1"},
    {"type": "click", "selector": "main h1"},
    {"type": "scroll", "direction": "down"},
    {"type": "executeJavascript", "script": "document.querySelectorAll('main p').length"},
    {"type": "scrape"},
    {"type": "screenshot"},
    {"type": "pdf", "format": "A4"},
]


def serve(port: int) -> None:
    """The site: /app/<n> (a shell) and /api/<n> (its data)."""

    async def shell(request: web.Request) -> web.Response:
        n = request.match_info["n"]
        return web.Response(text=SHELL.format(n=n), content_type="text/html")

    async def api(request: web.Request) -> web.Response:
        n = request.match_info["n"]
        paragraphs = [SENTENCE.format(n=f"{n}.{i}") for i in range(5)]
        return web.json_response({"title": f"Item {n}", "paragraphs": paragraphs})

    app = web.Application()
    app.add_routes([web.get("/app/{n}", shell), web.get("/api/{n}", api)])
    web.run_app(app, host="127.0.0.1", port=port, access_log=None, print=None)


@dataclass
class Checkpoint:
    pages: int
    browser_processes: int
    marked_processes: int
    browser_rss_mb: float
    driver_rss_mb: float
    python_rss_mb: float


@dataclass
class Report:
    pages: int
    concurrency: int
    recycle_pages: int
    seconds: float
    pages_per_second: float
    actions_per_page: int
    actions_per_second: float
    failed: int
    launches: int
    recycled_after_pages: int
    recycled_for_memory: int
    most_browser_processes: int
    most_processes_were: list[str]
    most_browser_rss_mb: float
    browsers_started: int
    checkpoints: list[Checkpoint] = field(default_factory=list)


def _kinds(pgid: int) -> list[str]:
    """The chromium process types (``--type=``) in a group: browser, renderer, utility..."""
    from taskcrawler.browser import processes

    kinds = []
    for info in processes.group_members(pgid):
        # Chromium rewrites its children's titles: the arguments become one string.
        try:
            with open(f"/proc/{info.pid}/cmdline", "rb") as handle:
                title = handle.read().decode("utf-8", "replace").replace("\0", " ")
        except OSError:
            title = ""
        kind = title.split("--type=", 1)[1].split(" ", 1)[0] if "--type=" in title else "browser"
        if "--utility-sub-type=" in title:
            kind = title.split("--utility-sub-type=", 1)[1].split(" ", 1)[0]
        kinds.append(kind + (" (zombie)" if info.is_zombie else ""))
    return sorted(kinds)


def _acted_fully(result: Any, actions: tuple[Any, ...]) -> bool:
    """Every action gave what it should: the script's count, a scrape, a PNG and a PDF."""
    if not actions:
        return True
    acted = result.actions or {}
    kinds = [capture.kind for capture in result.captures]
    return (
        acted.get("javascriptReturns") == [{"type": "number", "value": 5}]
        and len(acted.get("scrapes") or ()) == 1
        and kinds == ["screenshot", "pdf"]
        and result.captures[1].data.startswith(b"%PDF-")
    )


def _rss_mb(pid: int | None) -> float:
    from taskcrawler.browser import processes

    info = None if pid is None else processes.read_process(pid)
    return 0.0 if info is None else info.rss_bytes / 2**20


async def run(args: argparse.Namespace, port: int) -> Report:
    from taskcrawler.browser import BrowserRenderer, RenderOptions, processes
    from taskcrawler.browser.launcher import INSTANCE_VARIABLE
    from taskcrawler.domain.actions import parse_actions
    from taskcrawler.settings import Settings

    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        allow_private_networks=True,  # the site is on loopback
        browser_concurrency=args.concurrency,
        browser_recycle_pages=args.recycle_pages,
    )
    renderer = BrowserRenderer(settings)
    actions = parse_actions(ACTIONS) if args.actions else ()
    options = RenderOptions(wait_for_selector="main h1", actions=actions)
    instances: set[str] = set()
    most, most_kinds, most_rss = 0, [], 0.0
    done = failed = 0
    checkpoints: list[Checkpoint] = []
    stop = asyncio.Event()

    def note_instance() -> None:
        current = renderer._current
        if current is not None:
            instances.add(current.instance)

    async def sample() -> None:
        nonlocal most, most_kinds, most_rss
        while not stop.is_set():
            note_instance()
            count = renderer.browser_processes()
            if count > most:
                current = renderer._current
                most, most_kinds = count, [] if current is None else _kinds(current.pgid)
            most_rss = max(most_rss, renderer.browser_resident_bytes() / 2**20)
            await asyncio.sleep(0.05)

    def checkpoint() -> None:
        current = renderer._current
        marked = sum(len(processes.carrying_variable(INSTANCE_VARIABLE, i)) for i in instances)
        checkpoints.append(
            Checkpoint(
                pages=done,
                browser_processes=renderer.browser_processes(),
                marked_processes=marked,
                browser_rss_mb=renderer.browser_resident_bytes() / 2**20,
                driver_rss_mb=_rss_mb(None if current is None else current.driver_pid),
                python_rss_mb=_rss_mb(os.getpid()),
            )
        )

    async def render_range(first: int, last: int) -> None:
        queue: asyncio.Queue[int] = asyncio.Queue()
        for n in range(first, last):
            queue.put_nowait(n)

        async def worker() -> None:
            nonlocal done, failed
            while not queue.empty():
                n = queue.get_nowait()
                try:
                    result = await renderer.render(f"http://127.0.0.1:{port}/app/{n}", options)
                    if f"Item {n}" not in result.html or not _acted_fully(result, actions):
                        failed += 1
                except Exception as exc:
                    failed += 1
                    print(f"page {n}: {exc}", file=sys.stderr)
                done += 1

        await asyncio.gather(*(worker() for _ in range(args.concurrency)))

    # Memory is compared between two moments with no page in flight: after the first tenth of
    # the pages and at the end.
    first_tenth = max(1, args.pages // 10)
    sampler = asyncio.ensure_future(sample())
    started = time.perf_counter()
    await render_range(0, first_tenth)
    note_instance()
    checkpoint()
    await render_range(first_tenth, args.pages)
    seconds = time.perf_counter() - started
    note_instance()
    checkpoint()
    stop.set()
    await sampler
    stats = renderer.stats
    await renderer.close()
    await asyncio.sleep(1.0)  # let the last browser's processes be reaped
    done_marked = sum(len(processes.carrying_variable(INSTANCE_VARIABLE, i)) for i in instances)
    checkpoints.append(Checkpoint(done, 0, done_marked, 0.0, 0.0, _rss_mb(os.getpid())))
    return Report(
        pages=args.pages,
        concurrency=args.concurrency,
        recycle_pages=args.recycle_pages,
        seconds=round(seconds, 2),
        pages_per_second=round(args.pages / seconds, 2),
        actions_per_page=len(actions),
        actions_per_second=round(args.pages * len(actions) / seconds, 2),
        failed=failed,
        launches=stats.launches,
        recycled_after_pages=stats.recycled_after_pages,
        recycled_for_memory=stats.recycled_for_memory,
        most_browser_processes=most,
        most_processes_were=most_kinds,
        most_browser_rss_mb=round(most_rss, 1),
        browsers_started=len(instances),
        checkpoints=checkpoints,
    )


def print_report(report: Report) -> None:
    print(
        f"{report.pages} pages, {report.concurrency} in flight, recycled every "
        f"{report.recycle_pages}: {report.pages_per_second} pages/s ({report.seconds} s), "
        f"{report.failed} failed, {report.launches} browsers started"
    )
    if report.actions_per_page:
        print(f"{report.actions_per_page} actions a page: {report.actions_per_second} actions/s")
    print(
        f"most chromium processes seen while rendering: {report.most_browser_processes} "
        f"({', '.join(report.most_processes_were)}); most browser RSS "
        f"{report.most_browser_rss_mb} MB"
    )
    print("pages  browser-procs  marked-procs  browser-RSS-MB  driver-RSS-MB  python-RSS-MB")
    for c in report.checkpoints:
        print(
            f"{c.pages:5d}  {c.browser_processes:13d}  {c.marked_processes:12d}  "
            f"{c.browser_rss_mb:14.1f}  {c.driver_rss_mb:13.1f}  {c.python_rss_mb:13.1f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--recycle-pages", type=int, default=200)
    parser.add_argument(
        "--actions", action="store_true", help="run the page actions of ACTIONS on every page"
    )
    parser.add_argument("--json", action="store_true", help="print the report as one JSON line")
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
        return
    from tests.support.services import free_port, port_open

    port = free_port()
    site = subprocess.Popen([sys.executable, "-m", "bench.render", "--serve", str(port)])
    try:
        for _ in range(100):
            if port_open(port):
                break
            time.sleep(0.05)
        report = asyncio.run(run(args, port))
    finally:
        site.terminate()
        site.wait(timeout=10)
    if args.json:
        print(json.dumps(asdict(report)))
    else:
        print_report(report)


if __name__ == "__main__":
    main()
