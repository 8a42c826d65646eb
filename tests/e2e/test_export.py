"""``GET /api/v1/export`` and ``taskcrawler export`` end to end: pages scraped by the worker,
read back as JSON Lines and as WARC (warcio checks every digest), resumed with the cursor."""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import io
import json
import threading
import tracemalloc
import uuid
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa
from warcio.archiveiterator import ArchiveIterator

from taskcrawler.api.routes.export import NEXT_SINCE
from taskcrawler.client import AsyncTaskCrawler, TaskCrawler
from taskcrawler.client._calls import NEXT_SINCE as CLIENT_NEXT_SINCE
from taskcrawler.domain.keys import Caller
from taskcrawler.storage import Database
from taskcrawler.storage.tables import jobs, page_archive
from tests.e2e.harness import Service
from tests.support import seeding
from tests.support.cli import Api, Result, keyed, run_cli
from tests.support.served import Served
from tests.support.target import TargetServer


async def scraped(service: Service, target: TargetServer, paths: list[str]) -> list[dict]:
    done = []
    for path in paths:
        response = await service.client.post(
            "/api/v1/jobs", json={"url": target.url(path), "formats": ["metadata", "markdown"]}
        )
        done.append(await service.wait_for(response.json()["id"]))
    return done


def lines(body: bytes) -> list[dict]:
    return [json.loads(line) for line in body.splitlines()]


async def export(
    service: Service, count: int, headers: dict[str, str] | None = None, **params: str
) -> httpx.Response:
    """The export once it holds ``count`` records. On PostgreSQL a finish is exported once every
    transaction that was running when it committed has ended: on a shared server (other tests,
    benchmarks), a few milliseconds after the job is seen finished."""
    for _ in range(200):
        response = await service.client.get("/api/v1/export", params=params, headers=headers)
        assert response.status_code == 200, response.text
        if len(response.content.splitlines()) >= count:
            return response
        await asyncio.sleep(0.05)
    raise AssertionError(f"fewer than {count} records: {response.content[:500]!r}")


async def test_jsonl_export_resumes_with_its_cursor(service: Service, target: TargetServer) -> None:
    first = await scraped(service, target, ["/title/One", "/status/404"])
    response = await export(service, 2)
    assert response.headers["content-type"].startswith("application/x-ndjson")
    records = lines(response.content)
    assert [r["job"]["id"] for r in records] == [j["id"] for j in first]
    assert [r["job"]["status"] for r in records] == ["COMPLETED", "FAILED"]
    assert "One" in records[0]["content"]["markdown"]
    cursor = response.headers[NEXT_SINCE]
    assert cursor == records[-1]["cursor"]

    empty = await service.client.get("/api/v1/export", params={"since": cursor})
    assert empty.content == b"" and empty.headers[NEXT_SINCE] == cursor
    [later] = await scraped(service, target, ["/title/Two"])
    resumed = await export(service, 1, since=cursor)
    assert [r["job"]["id"] for r in lines(resumed.content)] == [later["id"]]
    # A record's own cursor resumes right after it.
    after_first = await export(service, 2, since=records[0]["cursor"])
    assert [r["job"]["id"] for r in lines(after_first.content)] == [first[1]["id"], later["id"]]


async def test_warc_export_holds_each_response_as_fetched(
    service: Service, target: TargetServer
) -> None:
    paths = ["/title/Archived", "/page/3"]
    done = await scraped(service, target, [*paths, "/status/500"])
    await export(service, 3)  # every finish is final
    response = await service.client.get("/api/v1/export", params={"format": "warc"})
    assert response.status_code == 200 and response.headers["content-type"] == "application/warc"
    # warcio reads each record's payload while it iterates (and checks its digests then).
    records = [
        (r.rec_type, r.rec_headers.get_header("WARC-Target-URI"), r.content_stream().read(), r)
        for r in ArchiveIterator(io.BytesIO(response.content), check_digests="raise")
    ]
    kinds = [kind for kind, *_ in records]
    # The 500 was retried and failed: its archive, if any, is kept like the others'.
    assert kinds[0] == "warcinfo" and kinds.count("response") == kinds.count("request") >= 2
    async with httpx.AsyncClient() as direct:
        for kind, uri, payload, record in records:
            if kind != "response":
                continue
            expected = await direct.get(uri)
            if expected.status_code != 200:
                continue
            assert payload == expected.content
            assert record.http_headers.get_statuscode() == "200"
    uris = {uri for kind, uri, _, _ in records if kind == "response"}
    assert {target.url(p) for p in paths} <= uris
    assert {j["status"] for j in done} == {"COMPLETED", "FAILED"}


async def test_bad_input_is_a_422_naming_the_parameter(service: Service) -> None:
    unknown = await service.client.get("/api/v1/export", params={"format": "csv"})
    assert unknown.status_code == 422 and unknown.json()["detail"][0]["loc"] == ["query", "format"]
    for bad in ("garbage", "djEuMS4y", "x" * 101):
        refused = await service.client.get("/api/v1/export", params={"since": bad})
        assert refused.status_code == 422, bad
        assert refused.json()["detail"][0]["loc"] == ["query", "since"]
    assert (await service.client.get("/api/v1/export", params={"limit": 0})).status_code == 422


async def test_a_tenant_exports_only_its_own(service_factory, target: TargetServer) -> None:  # type: ignore[no-untyped-def]
    async with service_factory(auth_required=True) as service:
        alice, bob = await service.new_key("alice"), await service.new_key("bob")
        response = await service.client.post(
            "/api/v1/jobs", json={"url": target.url("/page/5")}, headers=alice
        )
        job_id = response.json()["id"]
        for _ in range(500):
            job = (await service.client.get(f"/api/v1/jobs/{job_id}", headers=alice)).json()
            if job["status"] in ("COMPLETED", "FAILED"):
                break
            await asyncio.sleep(0.02)
        theirs = await export(service, 1, headers=alice)
        assert [r["job"]["id"] for r in lines(theirs.content)] == [job_id]
        assert (await service.client.get("/api/v1/export", headers=bob)).content == b""
        assert (await service.client.get("/api/v1/export")).status_code == 401


async def settled(db: Database) -> None:
    """Until every finish is final (on PostgreSQL: no transaction older than the last still
    running, other sessions' included)."""
    for _ in range(200):
        async with db.read() as conn:
            horizon = await db.backend.export_horizon(conn)
            top = await conn.scalar(sa.select(sa.func.max(jobs.c.export_seq)))
        if horizon is None or top is None or horizon > top:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("an old transaction holds the export back")


#: Enough jobs for 20 pages of the export (exports.PAGE) and 25 MB of it. What the stream holds
#: does not grow with the export: its peak was 0.9-1.4 MB at 2,000 jobs and 1.1-1.6 MB at
#: 10,000 (each mode), so a bound of 10 MB leaves it room, and an export that held its whole
#: body (25 MB of text, more as JSON) is far above it.
STREAMED_JOBS = 2_000


@pytest.mark.timeout(600)
async def test_thousands_of_results_stream_in_flat_memory(service: Service) -> None:
    """2,000 jobs of 12 KB of text each (25 MB of export): the stream's peak of allocated
    memory stays far below it. Measured with tracemalloc (Python's own allocations, every
    thread's): the process's RSS also holds SQLite's page cache (64 MB a connection), bounded
    by configuration, not by the export."""
    count, text = STREAMED_JOBS, "word " * 2400
    db = service.storage.db
    await seeding.finished_jobs(service.storage, count, text, formats=("markdown",))
    await settled(db)
    tracemalloc.start()
    try:
        export_ = await service.services.exports.export(Caller(), "jsonl")
        exported = total = 0
        async for chunk in export_.chunks:
            exported += chunk.count(b"\n")
            total += len(chunk)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert exported == count and total > 24_000_000
    assert peak < 10_000_000, f"peak {peak / 1e6:.0f} MB for {total / 1e6:.0f} MB"


def test_the_client_reads_the_header_the_route_sends() -> None:
    assert CLIENT_NEXT_SINCE == NEXT_SINCE


@pytest.fixture
async def served(keyed_server: Served, request: pytest.FixtureRequest) -> Api:
    """The module's server as this test's own key sees it."""
    return await keyed(keyed_server, request)


async def cli(served: Api, *args: str, cwd: Path) -> Result:
    """``taskcrawler export *args`` with the test's key, in the test's process
    (tests/support/cli.py)."""
    assert served.key is not None
    return await run_cli("export", *args, cwd=cwd, env={"TASKCRAWLER_API_KEY": served.key})


async def test_the_command_and_the_clients_resume_with_a_cursor_file(
    served: Api, target: TargetServer, tmp_path: Path
) -> None:
    async with AsyncTaskCrawler(served.base_url, api_key=served.key) as tc:
        first = (await tc.submit(target.url("/title/First"))).job
        async with asyncio.timeout(30):
            await tc.wait(first.id, interval=0.05)
        records = [record async for record in tc.export()]
        assert [r.job.id for r in records] == [first.id]

    state, out = tmp_path / "cursor", tmp_path / "one.jsonl"
    api = ("--api", served.base_url)
    done = await cli(served, "--cursor-file", str(state), "-o", str(out), *api, cwd=tmp_path)
    assert done.code == 0, done.err
    assert [json.loads(line)["job"]["id"] for line in out.read_text().splitlines()] == [
        str(first.id)
    ]
    assert state.read_text().strip() == records[0].cursor

    with TaskCrawler(served.base_url, api_key=served.key) as tc:
        second = tc.submit(target.url("/title/Second")).job
        tc.wait(second.id, interval=0.05, timeout=30)
    again = await cli(served, "--cursor-file", str(state), *api, cwd=tmp_path)
    assert again.code == 0, again.err
    assert [json.loads(line)["job"]["id"] for line in again.out.splitlines()] == [str(second.id)]

    warc = tmp_path / "all.warc.gz"
    whole = await cli(served, "--format", "warc", "-o", str(warc), *api, cwd=tmp_path)
    assert whole.code == 0, whole.err
    with warc.open("rb") as stream:
        responses = [
            r for r in ArchiveIterator(stream, check_digests="raise") if r.rec_type == "response"
        ]
    assert len(responses) == 2

    bad = await cli(served, "--since", "nonsense", *api, cwd=tmp_path)
    assert bad.code == 2 and bad.err.startswith("error: 422 Unprocessable Entity: since:")
    assert uuid.UUID(str(first.id))


async def test_the_command_exports_one_crawl(
    served: Api, target: TargetServer, tmp_path: Path
) -> None:
    async with AsyncTaskCrawler(served.base_url, api_key=served.key) as tc:
        alone = (await tc.submit(target.url("/title/Alone"))).job
        crawl = await tc.start_crawl(target.url("/page/0"), max_depth=1, sitemap="skip")
        async with asyncio.timeout(60):
            await tc.wait(alone.id, interval=0.05)
            while (await tc.get_crawl(crawl.id)).status == "RUNNING":  # noqa: ASYNC110
                await asyncio.sleep(0.1)
        records = [record async for record in tc.export(crawl_id=crawl.id)]
    assert sorted(r.job.url for r in records) == [target.url("/page/0"), target.url("/page/1")]

    api = ("--api", served.base_url)
    done = await cli(served, "--crawl", str(crawl.id), *api, cwd=tmp_path)
    assert done.code == 0, done.err
    exported = sorted(json.loads(line)["job"]["url"] for line in done.out.splitlines())
    assert exported == [target.url("/page/0"), target.url("/page/1")]
    bad = await cli(served, "--crawl", "nonsense", *api, cwd=tmp_path)
    # The command takes a start of an id and refuses what cannot be one, naming it.
    assert bad.code == 2 and "'nonsense': a short id is" in bad.err, bad.err


async def test_the_api_answers_while_a_warc_export_decodes_archived_bodies(
    service: Service, target: TargetServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Decoding an archived body (and writing its records) is CPU work an export does for each
    page: off the event loop, which answers other requests meanwhile. The first decode waits
    until another request has been answered, which it could not get if it held the loop."""
    [job, _] = await scraped(service, target, ["/page/1", "/page/2"])
    await export(service, 2)  # both finishes are final
    decoding, answered = threading.Event(), threading.Event()
    waited: list[bool] = []
    decompress = gzip.decompress

    def gated(data: bytes) -> bytes:
        if not waited:
            decoding.set()
            # A bound for a loop held by this very call (no answer can come then), not a timing.
            waited.append(answered.wait(20))
        return decompress(data)

    monkeypatch.setattr(gzip, "decompress", gated)
    streaming = asyncio.create_task(service.client.get("/api/v1/export", params={"format": "warc"}))
    await asyncio.to_thread(decoding.wait, 20)
    other = await service.client.get(f"/api/v1/jobs/{job['id']}")
    assert other.status_code == 200
    answered.set()
    exported = await streaming
    assert waited == [True]
    kinds = [r.rec_type for r in ArchiveIterator(io.BytesIO(exported.content))]
    assert kinds.count("response") == 2


#: Archived bodies of the WARC export memory test: a group's (16) decoded at once is 64 MB.
ARCHIVED_BODY = 4_000_000


@pytest.mark.timeout(600)
async def test_a_warc_export_holds_one_decoded_body_at_a_time(service: Service) -> None:
    """16 archived pages of 4 MB each (gzipped to kilobytes), read as one group: the export's
    peak of allocated memory (tracemalloc, every thread's) stays below half of the group's
    decoded bodies."""
    count = 16
    ids = await seeding.finished_jobs(service.storage, count, "text")
    body = b"<p>" + b"a" * (ARCHIVED_BODY - 3)
    async with service.storage.db.write() as conn:
        await conn.execute(
            page_archive.insert(),
            [
                {
                    "job_id": job_id,
                    "fetched_at": datetime.now(UTC),
                    "final_url": f"http://seeded.test/{n}",
                    "http_status": 200,
                    "headers": {"content-type": "text/html"},
                    "sha256": hashlib.sha256(body).hexdigest(),
                    "size": len(body),
                    "body_gz": gzip.compress(body),
                }
                for n, job_id in enumerate(ids)
            ],
        )
    await settled(service.storage.db)
    tracemalloc.start()
    try:
        export_ = await service.services.exports.export(Caller(), "warc")
        records = b"".join([chunk async for chunk in export_.chunks])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    responses = [r for r in ArchiveIterator(io.BytesIO(records)) if r.rec_type == "response"]
    assert len(responses) == count
    assert peak < count * ARCHIVED_BODY / 2, f"peak {peak / 1e6:.0f} MB"
