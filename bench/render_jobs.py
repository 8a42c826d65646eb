"""Rendered jobs through one worker: ``python -m bench.render_jobs``.

A worker built by the composition root (SQLite in a temporary folder, the in-process queue,
the fetcher, the parser processes and the render step, one chromium) runs ``--jobs`` jobs with
``render: auto`` against a local site (in a child process): half of the pages are app shells
that build their text from a JSON request, half are server-rendered pages with an analytics
script. It reports:

* jobs/s, and how many of the shells ``auto`` rendered and of the static pages it skipped;
* chromium processes of the worker's browser at the end (no page in flight) and, after the
  worker stopped, every process left that carries a marker of one of its browsers;
* this process's RSS (the worker) after the first tenth of the jobs and at the end.

Not a test: figures depend on the machine; bench/RESULTS.md keeps the latest measured.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

from aiohttp import web

from bench.render import SENTENCE, SHELL

STATIC = """<!doctype html><html><head><title>Static {n}</title>
<script async src="/analytics.js"></script></head><body><main><h1>Static {n}</h1>{text}</main>
</body></html>"""


def serve(port: int) -> None:
    async def shell(request: web.Request) -> web.Response:
        return web.Response(text=SHELL.format(n=request.match_info["n"]), content_type="text/html")

    async def api(request: web.Request) -> web.Response:
        n = request.match_info["n"]
        paragraphs = [SENTENCE.format(n=f"{n}.{i}") for i in range(5)]
        return web.json_response({"title": f"Item {n}", "paragraphs": paragraphs})

    async def static(request: web.Request) -> web.Response:
        n = request.match_info["n"]
        text = "".join(f"<p>{SENTENCE.format(n=f'{n}.{i}')}</p>" for i in range(5))
        return web.Response(text=STATIC.format(n=n, text=text), content_type="text/html")

    async def script(request: web.Request) -> web.Response:
        return web.Response(text="/* analytics */", content_type="text/javascript")

    app = web.Application()
    app.add_routes(
        [
            web.get("/app/{n}", shell),
            web.get("/api/{n}", api),
            web.get("/static/{n}", static),
            web.get("/analytics.js", script),
        ]
    )
    web.run_app(app, host="127.0.0.1", port=port, access_log=None, print=None)


def _words(job: Any) -> int:
    return int((job.result or {}).get("metadata", {}).get("word_count") or 0)


def _rss_mb() -> float:
    from taskcrawler.browser import processes

    info = processes.read_process(os.getpid())
    return 0.0 if info is None else info.rss_bytes / 2**20


async def run(args: argparse.Namespace, port: int, folder: str) -> dict[str, Any]:
    from taskcrawler import bootstrap
    from taskcrawler.browser import processes
    from taskcrawler.browser.launcher import INSTANCE_VARIABLE
    from taskcrawler.domain.jobs import NewJob
    from taskcrawler.settings import Settings
    from taskcrawler.storage import upgrade_database

    url = f"sqlite+aiosqlite:///{folder}/bench.db"
    await upgrade_database(url)
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        database_url=url,
        allow_private_networks=True,  # the site is on loopback
        respect_robots=False,
        browser_concurrency=args.concurrency,
        browser_recycle_pages=args.recycle_pages,
        worker_concurrency=4 * args.concurrency,
    )
    runtime = bootstrap.Runtime.open(settings)
    fetcher = bootstrap.fetcher(settings)
    parser = bootstrap.page_parser(settings)
    rendering = bootstrap.render_step(settings, parser)
    assert rendering.available, rendering.availability.reason
    renderer: Any = rendering.renderer
    from taskcrawler.observability import WorkerMetrics
    from taskcrawler.observability.metrics import process_registry

    worker = bootstrap.worker(
        runtime, fetcher, parser, WorkerMetrics(process_registry()), rendering
    )
    stop = asyncio.Event()
    task = asyncio.create_task(worker.run(stop))
    instances: set[str] = set()

    def note_instance() -> None:
        if renderer._current is not None:
            instances.add(renderer._current.instance)

    async def run_jobs(first: int, last: int) -> list[Any]:
        urls = [
            f"http://127.0.0.1:{port}/{'app' if n % 2 == 0 else 'static'}/{n}"
            for n in range(first, last)
        ]
        created = await runtime.storage.jobs.create_jobs(
            [NewJob(u, render="auto") for u in urls], redispatch_after=300
        )
        await runtime.queue.publish([c.job.id for c in created])
        finished = []
        for c in created:
            while True:
                note_instance()
                job = await runtime.storage.jobs.get_job(c.job.id)
                assert job is not None
                if job.status.is_final:
                    finished.append(job)
                    break
                await asyncio.sleep(0.05)
        return finished

    first_tenth = max(2, args.jobs // 10)
    started = time.perf_counter()
    jobs = await run_jobs(0, first_tenth)
    rss_first = _rss_mb()
    jobs += await run_jobs(first_tenth, args.jobs)
    seconds = time.perf_counter() - started
    rss_end = _rss_mb()
    processes_end = renderer.browser_processes()
    stop.set()
    await task
    await rendering.close()
    await fetcher.close()
    await parser.aclose()
    await runtime.close()
    await asyncio.sleep(1.0)
    left = sum(len(processes.carrying_variable(INSTANCE_VARIABLE, i)) for i in instances)

    def rendered(job: Any) -> bool:
        return bool(job.result and job.result.get("render", {}).get("rendered"))

    shells = [j for j in jobs if "/app/" in j.url]
    static = [j for j in jobs if "/static/" in j.url]
    return {
        "jobs": args.jobs,
        "seconds": round(seconds, 2),
        "jobs_per_second": round(args.jobs / seconds, 2),
        "failed": sum(j.status.value != "COMPLETED" for j in jobs),
        "shells_rendered": f"{sum(map(rendered, shells))}/{len(shells)}",
        "static_skipped": f"{sum(not rendered(j) for j in static)}/{len(static)}",
        # A shell holds no text until rendered; a rendered one has five sentences.
        "shells_with_text": sum(_words(j) > 20 for j in shells),
        "shells_without_text": [
            {"url": j.url, "words": _words(j), "render": (j.result or {}).get("render")}
            for j in shells
            if _words(j) <= 20
        ],
        "browsers_started": len(instances),
        "browser_processes_at_end": processes_end,
        "processes_left_after_stop": left,
        "worker_rss_mb_after_first_tenth": round(rss_first, 1),
        "worker_rss_mb_at_end": round(rss_end, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--recycle-pages", type=int, default=200)
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
        return
    from tests.support.services import free_port, port_open

    port = free_port()
    site = subprocess.Popen([sys.executable, "-m", "bench.render_jobs", "--serve", str(port)])
    try:
        for _ in range(100):
            if port_open(port):
                break
            time.sleep(0.05)
        with tempfile.TemporaryDirectory() as folder:
            report = asyncio.run(run(args, port, folder))
    finally:
        site.terminate()
        site.wait(timeout=10)
    for key, value in report.items():
        print(f"{key}: {value}")


if __name__ == "__main__":
    main()
