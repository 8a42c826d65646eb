"""A job's render options, its screenshot and its actions' files, stored and read back on both
databases."""

from __future__ import annotations

import uuid

from taskcrawler.domain import Outcome
from taskcrawler.domain.pages import Capture, PageContent, Screenshot
from taskcrawler.domain.rendering import RenderRequest
from taskcrawler.storage import ContentStore, NewJob
from taskcrawler.storage.exports import ExportStore
from tests.support.stores import Stores
from tests.support.transitions import decided

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40  # bytes of every value, NUL included


async def test_render_options_go_from_submission_to_claim(store: Stores) -> None:
    options = RenderRequest(
        wait_until="networkidle", wait_for="#app", block=("image",), viewport_width=900
    )
    created = await store.jobs.create_jobs(
        [
            NewJob("http://a.test/", render="auto", render_options=options),
            NewJob("http://b.test/", formats=("screenshot",), render="always"),
            NewJob("http://c.test/"),
        ],
        redispatch_after=30,
    )
    assert [c.job.render for c in created] == ["auto", "always", "never"]
    assert created[0].job.render_options == options
    read = [await store.jobs.get_job(c.job.id) for c in created]
    assert [job.render if job else None for job in read] == ["auto", "always", "never"]
    assert read[0] is not None and read[0].render_options == options
    assert read[2] is not None and read[2].render_options is None
    claimed = await store.work.claim(
        [c.job.id for c in created], lease_seconds=30, redispatch_after=30
    )
    by_url = {job.url: job for job in claimed}
    assert by_url["http://a.test/"].render_options == options
    assert by_url["http://b.test/"].render == "always"
    assert by_url["http://c.test/"].render == "never"
    assert by_url["http://c.test/"].render_options == RenderRequest()


async def test_a_screenshot_is_stored_with_the_outcome_and_replaced_by_a_rerun(
    store: Stores,
) -> None:
    created = await store.jobs.create_jobs(
        [NewJob("http://shot.test/", formats=("screenshot",), render="always")],
        redispatch_after=30,
    )
    job_id = created[0].job.id
    content = ContentStore(store.db)
    assert await content.screenshot(job_id) is None
    [job] = await store.work.claim([job_id], lease_seconds=30, redispatch_after=30)
    shot = Screenshot(PNG, 1280, 3000, cut=True)
    files = (
        Capture("screenshot", PNG[:50]),
        Capture("pdf", b"%PDF-1.4\x00\xff"),
        Capture("screenshot", PNG),
    )
    page = PageContent(texts={"markdown": "# Shot"}, screenshot=shot, captures=files)
    await store.work.record_transitions(
        decided([Outcome(job=job, http_status=200, content=page, result={})])
    )
    assert await content.screenshot(job_id) == shot
    assert await content.screenshot(uuid.uuid4()) is None
    # The actions' files, each by its kind and its index among those of its kind.
    assert await content.capture(job_id, "screenshot", 0) == PNG[:50]
    assert await content.capture(job_id, "screenshot", 1) == PNG
    assert await content.capture(job_id, "pdf", 0) == b"%PDF-1.4\x00\xff"
    assert await content.capture(job_id, "pdf", 1) is None
    # They are no text of the job: an export leaves them out.
    assert await ExportStore(store.db).texts([job_id]) == {job_id: {"markdown": "# Shot"}}

    # A run that made no files of its own (extracted again from the stored copy) keeps them;
    # one whose render made none replaces them with nothing.
    for run, made in [(1, None), (2, ())]:
        await store.jobs.restart([job_id], owner="", redispatch_after=0)
        [again] = await store.work.claim([job_id], lease_seconds=30, redispatch_after=30)
        assert again.run_count == run
        newer = Screenshot(PNG[:100], 800, 600, cut=False)
        page = PageContent(texts={"markdown": f"# Run {run}"}, screenshot=newer, captures=made)
        await store.work.record_transitions(
            decided([Outcome(job=again, http_status=200, content=page, result={})])
        )
        assert await content.screenshot(job_id) == newer
        assert await content.text(job_id, "markdown") == f"# Run {run}"
        kept = await content.capture(job_id, "pdf", 0)
        assert kept == (b"%PDF-1.4\x00\xff" if made is None else None), run
