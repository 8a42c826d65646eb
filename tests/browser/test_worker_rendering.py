"""The worker's render step with Debian's chromium: jobs with render=always, auto and never, a
screenshot through the API, a page reaching inward, a page that hangs, a browser killed mid-render,
and no chromium left once the worker stops.

Two ways in: the API of an embedded ``taskcrawler serve`` (the composition root's wiring, local
pages allowed as every end-to-end test allows them), and a worker built here with the renderer
tests' guard and fake DNS, where ``intranet.test`` and 127.0.0.2 stay blocked as they are in
production.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from taskcrawler import bootstrap
from taskcrawler.browser import BrowserRenderer, processes
from taskcrawler.browser.renderer import png_size
from taskcrawler.domain import Job
from taskcrawler.domain.jobs import NewJob
from taskcrawler.domain.rendering import RenderRequest
from taskcrawler.fetch import Fetcher
from taskcrawler.queue.memory import MemoryQueue
from taskcrawler.storage import Storage
from taskcrawler.worker.rendering import RenderStep
from taskcrawler.worker.worker import Worker
from tests.browser.conftest import (
    LOOPING_PAGE_DEADLINE_SECONDS,
    chromium_path,
    gone,
    pretend_public,
    render_settings,
    resolver,
)
from tests.e2e.harness import fast_settings, running
from tests.support.render_site import RenderSite

FINAL_WITHIN_SECONDS = 90.0  # a bound for a hang, not a speed claim


def our_chromium() -> list[processes.ProcessInfo]:
    """Live chromium processes descended from this process."""
    everyone = processes.all_processes()
    children: dict[int, list[processes.ProcessInfo]] = {}
    for info in everyone:
        children.setdefault(info.ppid, []).append(info)
    found, todo = [], [os.getpid()]
    while todo:
        for child in children.get(todo.pop(), []):
            todo.append(child.pid)
            if child.name in processes.CHROMIUM_NAMES and not child.is_zombie:
                found.append(child)
    return found


# --- through the API --------------------------------------------------------------------------


async def test_jobs_render_as_asked_and_a_screenshot_is_served(
    site: RenderSite, sqlite_url: str
) -> None:
    settings = fast_settings(
        database_url=sqlite_url,
        browser=chromium_path(),
        browser_concurrency=2,
        render_timeout_seconds=20.0,
    )
    # Other tests' browsers (a session's fixture) may be running: only new ones are the worker's.
    before = {info.pgid for info in our_chromium()}
    async with running("embedded", settings) as service:
        post = service.client.post
        local = "127.0.0.1"
        answers = [
            await post(
                "/api/v1/jobs",
                json={"url": site.url(path, host=local), "render": mode, "formats": ["text"]},
            )
            for path, mode in (("/spa", "always"), ("/spa?auto", "auto"), ("/static", "auto"))
        ]
        shot = await post(
            "/api/v1/jobs",
            json={
                "url": site.url("/tall?h=1500", host=local),
                "formats": ["screenshot"],
                "render_options": {"viewport": {"width": 800, "height": 600}},
            },
        )
        jobs = [await service.wait_for(a.json()["id"], within=60) for a in [*answers, shot]]
        assert [job["status"] for job in jobs] == ["COMPLETED"] * 4, jobs
        always, auto, static, tall = jobs

        for rendered in (always, auto):
            assert rendered["result"]["render"]["rendered"] is True
            text = await service.client.get(
                f"/api/v1/jobs/{rendered['id']}/content", params={"format": "text"}
            )
            assert "Brake pads" in text.text  # built by the page's script, then extracted
        assert "empty mount point" in auto["result"]["render"]["reason"]
        assert static["result"]["render"]["rendered"] is False
        assert static["scraped_title"] == "About us"
        assert tall["render"] == "always"

        picture = await service.client.get(f"/api/v1/jobs/{tall['id']}/screenshot")
        assert picture.status_code == 200
        assert picture.headers["content-type"] == "image/png"
        assert png_size(picture.content) == (800, 1500)
        other = await service.new_key("other")
        hidden = await service.client.get(f"/api/v1/jobs/{tall['id']}/screenshot", headers=other)
        assert hidden.status_code == 404
        none = await service.client.get(f"/api/v1/jobs/{static['id']}/screenshot")
        assert none.status_code == 404

        metrics = (await service.client.get("/metrics")).text
        assert "taskcrawler_render_available 1.0" in metrics
        assert "taskcrawler_render_rendered_total 3.0" in metrics
        groups = {info.pgid for info in our_chromium()} - before
        assert groups, "the worker's chromium runs while the service does"
    left = [p for p in processes.all_processes() if p.pgid in groups and not p.is_zombie]
    assert left == []
    assert {info.pgid for info in our_chromium()} <= before


# --- a worker with the production guard ------------------------------------------------------


@dataclass
class Running:
    storage: Storage
    queue: MemoryQueue
    renderer: BrowserRenderer

    async def submit(self, url: str, **fields: Any) -> Job:
        [created] = await self.storage.jobs.create_jobs(
            [NewJob(url, **fields)], redispatch_after=30
        )
        await self.queue.publish([created.job.id])
        return created.job

    async def final(self, job: Job) -> Job:
        deadline = time.monotonic() + FINAL_WITHIN_SECONDS
        while True:
            current = await self.storage.jobs.get_job(job.id)
            assert current is not None
            if current.status.is_final:
                return current
            assert time.monotonic() < deadline, f"not final: {current}"
            await asyncio.sleep(0.05)


@asynccontextmanager
async def guarded_worker(sqlite_url: str, **overrides: Any) -> AsyncIterator[Running]:
    values: dict[str, Any] = {
        "database_url": sqlite_url,
        "retry_base_seconds": 0.05,
        "retry_max_seconds": 0.1,
        "sweep_interval_seconds": 0.05,
        "worker_concurrency": 4,
        **overrides,
    }
    settings = render_settings(**values)
    storage = bootstrap.storage_of(settings)
    queue = MemoryQueue()
    fetcher = Fetcher(settings, guard=pretend_public(), resolver=resolver())
    parser = bootstrap.page_parser(settings)
    renderer = BrowserRenderer(settings, guard=pretend_public(), resolver=resolver())
    step = RenderStep(renderer, renderer.availability, parser)
    config = bootstrap.worker_config(settings)
    worker = Worker(config, storage.work, queue, fetcher, parser, rendering=step)
    stop = asyncio.Event()
    task = asyncio.create_task(worker.run(stop))
    try:
        yield Running(storage, queue, renderer)
    finally:
        stop.set()
        await task
        await step.close()
        await fetcher.close()
        await parser.aclose()
        await storage.close()


async def test_a_rendered_page_cannot_reach_inward(
    site: RenderSite, intranet: RenderSite, sqlite_url: str
) -> None:
    targets = [
        intranet.url("/secret", host="intranet.test"),
        intranet.url("/secret", host="127.0.0.2"),
        "http://169.254.169.254/latest/meta-data/",
    ]
    query = "&".join(f"fetch={t}" for t in targets) + f"&image={targets[0]}"
    async with guarded_worker(sqlite_url) as running_worker:
        job = await running_worker.submit(
            site.url(f"/reach?{query}"),
            render="always",
            render_options=RenderRequest(wait_until="networkidle", wait_seconds=3),
        )
        done = await running_worker.final(job)
    assert done.status.value == "COMPLETED", done.error_log
    assert done.result is not None
    render = done.result["render"]
    assert render["rendered"] is True and render["blocked_requests"] >= 3
    assert intranet.total_hits == 0  # refused before connecting


async def test_a_hanging_page_fails_render_timeout_and_the_next_job_renders(
    site: RenderSite, sqlite_url: str
) -> None:
    deadline = LOOPING_PAGE_DEADLINE_SECONDS
    async with guarded_worker(sqlite_url, render_timeout_seconds=deadline) as running_worker:
        # A page first, so the looping page's document comes at once.
        warm = await running_worker.final(
            await running_worker.submit(site.url("/static"), render="always")
        )
        hung = await running_worker.final(
            await running_worker.submit(site.url("/loop"), render="always")
        )
        after = await running_worker.final(
            await running_worker.submit(site.url("/spa"), render="always", formats=("text",))
        )
        timeouts = running_worker.renderer.stats.timeouts
    assert warm.status.value == "COMPLETED", warm.error_log
    assert hung.status.value == "FAILED" and hung.error_code == "render_timeout"
    assert hung.retry_count == 0  # the same page would hang again
    assert after.status.value == "COMPLETED", after.error_log
    assert after.result is not None and after.result["render"]["rendered"] is True
    assert timeouts == 1


async def test_a_browser_killed_mid_render_loses_no_job_and_leaves_no_process(
    site: RenderSite, sqlite_url: str
) -> None:
    async with guarded_worker(sqlite_url) as running_worker:
        renderer = running_worker.renderer
        job = await running_worker.submit(
            site.url("/late"),
            render="always",
            render_options=RenderRequest(wait_for="#never", wait_seconds=4),
            formats=("text",),
        )
        served = site.hits["/late"]
        deadline = time.monotonic() + FINAL_WITHIN_SECONDS
        # Until the browser has the page: it is waiting for its selector then.
        while renderer.browser_pid is None or site.hits["/late"] == served:
            assert time.monotonic() < deadline, "the render never started"
            await asyncio.sleep(0.05)
        killed = renderer.browser_pid
        first = renderer._current
        assert killed is not None and first is not None
        os.kill(killed, signal.SIGKILL)
        done = await running_worker.final(job)
        second = renderer._current
        assert second is not None and second is not first
        browsers = [(first.pgid, first.instance), (second.pgid, second.instance)]
        stats = renderer.stats
    assert done.status.value == "COMPLETED", done.error_log
    assert done.retry_count == 1 and done.error_code is None  # retried as a transient error
    assert done.result is not None and done.result["render"]["waits_timed_out"] == ["selector"]
    assert stats.crashes == 1 and stats.launches == 2
    for pgid, instance in browsers:
        assert await gone(pgid, instance) == []
