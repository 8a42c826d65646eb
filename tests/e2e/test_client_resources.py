"""The Python client's monitors, bulk operations, deliveries and keys against the real app, in
both modes (the rest of the client: tests/e2e/test_client.py)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import TypeVar

import pytest

from taskcrawler.client import JobStatus, TaskCrawlerError
from tests.e2e.harness import Service, ServiceFactory
from tests.e2e.test_client import client_of
from tests.support.changing_site import NOISE_SELECTORS, ChangingSiteServer, start_changing_site
from tests.support.patch import apply_patch
from tests.support.target import TargetServer

T = TypeVar("T")
FAST = {"monitor_min_interval_seconds": 0.1, "monitor_poll_seconds": 0.05}


@pytest.fixture
def site() -> Iterator[ChangingSiteServer]:
    server = start_changing_site(seed=7, per_kind=1)
    try:
        yield server
    finally:
        server.close()


async def eventually(read: Callable[[], Awaitable[T]], done: Callable[[T], bool]) -> T:
    """Call ``read`` until ``done`` says yes: the scheduler runs on the real clock here."""
    deadline = time.monotonic() + 20
    while True:
        try:
            value = await read()
        except TaskCrawlerError as error:
            if error.status != 404:  # not there yet is a 404; anything else is a failure
                raise
        else:
            if done(value):
                return value
        assert time.monotonic() < deadline, "never got there"
        await asyncio.sleep(0.05)


async def test_monitors_through_the_client(
    service_factory: ServiceFactory, site: ChangingSiteServer
) -> None:
    async with service_factory(**FAST) as service, client_of(service) as tc:
        url = site.url("/etag/0")
        monitor = await tc.create_monitor(
            0.3, urls=[url], ignore_selectors=list(NOISE_SELECTORS), formats=["markdown"]
        )
        assert monitor.status == "ACTIVE" and monitor.urls == [url]
        [page] = monitor.pages
        assert [m.id for m in (await tc.list_monitors()).monitors] == [monitor.id]
        assert (await tc.get_monitor(monitor.id)).id == monitor.id

        await eventually(lambda: tc.run_content(page.job_id, 0), lambda run: True)
        edit = site.site.change("/etag/0")
        changes = await eventually(lambda: tc.changes(monitor.id), lambda got: got.changes != [])
        [change] = changes.changes
        assert (change.kind, change.url, change.job_id) == ("changed", url, page.job_id)
        assert change.diff is not None and f"+{edit.new}" in change.diff
        assert (await tc.get_change(monitor.id, change.id)).diff == change.diff
        assert change.previous_run is not None and change.run is not None
        old = await tc.run_content(page.job_id, change.previous_run)
        new = await tc.run_content(page.job_id, change.run)
        assert apply_patch(old.markdown, change.diff) == new.markdown
        diff = await tc.diff(page.job_id, change.previous_run, change.run)
        assert (diff.from_run, diff.to_run, diff.diff) == (
            change.previous_run,
            change.run,
            change.diff,
        )

        paused = await tc.update_monitor(monitor.id, paused=True)
        assert paused.status == "PAUSED" and paused.next_run_at is None
        await tc.delete_monitor(monitor.id)
        with pytest.raises(TaskCrawlerError) as gone:
            await tc.get_monitor(monitor.id)
        assert gone.value.status == 404


async def test_bulk_cancel_retry_and_deliveries_through_the_client(
    service_factory: ServiceFactory, target: TargetServer
) -> None:
    async with service_factory(host_concurrency=1) as service, client_of(service) as tc:
        failed = (await tc.submit(target.url("/status/404"))).job
        async with asyncio.timeout(20):
            assert (await tc.wait(failed.id, interval=0.02)).status is JobStatus.FAILED
        assert await tc.deliveries(failed.id) == []  # no callback_url: nothing to deliver

        slow = [(await tc.submit(target.url(f"/slow?delay=1&c={n}"))).job.id for n in range(4)]
        cancelled = await tc.cancel_matching(ids=slow, statuses=["PENDING", "PROCESSING"])
        assert sorted(cancelled.ids) == sorted(slow) and not cancelled.more
        with pytest.raises(TaskCrawlerError) as empty:
            await tc.cancel_matching()
        assert empty.value.status == 422

        restarted = await tc.retry_matching(statuses=["FAILED"])
        assert restarted.ids == [failed.id]
        restarted = await tc.retry_matching(statuses=["CANCELLED"], host="127.0.0.1")
        assert sorted(restarted.ids) == sorted(slow)
        await tc.cancel_matching(statuses=["PENDING", "PROCESSING"])

        backlinks = await tc.backlinks(target.url("/page/2"))
        assert backlinks.links == []
        with pytest.raises(TaskCrawlerError) as no_picture:
            await tc.screenshot(failed.id)
        assert no_picture.value.status == 404


async def test_keys_through_the_client(service: Service) -> None:
    admin = await service.new_key("admin", is_admin=True)
    async with client_of(service, admin) as tc:
        created = await tc.create_key("worker", max_pending_jobs=10)
        assert created.key and created.webhook_secret and created.max_pending_jobs == 10
        assert created.id in {key.id for key in await tc.list_keys()}
        rotated = await tc.rotate_webhook_secret(created.id)
        assert rotated.webhook_secret != created.webhook_secret
        await tc.revoke_key(created.id)
        [revoked] = [key for key in await tc.list_keys() if key.id == created.id]
        assert revoked.revoked_at is not None
