"""read_run and read_crawl_page: what one finished run of a watched page (or one page of a crawl
monitor's round) means for its history and its changes."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from taskcrawler.domain.monitors import (
    ChangeKind,
    PageRun,
    Snapshot,
    StoredRun,
    read_crawl_page,
    read_run,
)
from taskcrawler.domain.runs import RunContent

NOW = datetime(2030, 1, 1, tzinfo=UTC)
JOB = uuid.uuid4()


def page(run: int, *, status: str = "COMPLETED", unchanged: bool = False) -> PageRun:
    return PageRun(
        monitor_id=uuid.uuid4(),
        owner="o",
        job_id=JOB,
        url="http://a.test/",
        run=run,
        status=status,
        http_status=304 if unchanged else 200,
        unchanged=unchanged,
        evaluated_run=run - 1 if run else None,
        baseline_run=run - 1 if run else None,
        ignore_selectors=(),
        callback_url=None,
    )


def snap(markdown: str, title: str = "T") -> Snapshot:
    return Snapshot.of(markdown=markdown, text=markdown, metadata={"title": title})


def stored(run: int, snapshot: Snapshot, content_run: int | None = None) -> StoredRun:
    digest = RunContent(snapshot.markdown, snapshot.text).digest
    return StoredRun(
        JOB, run, NOW, "COMPLETED", 200, snapshot.fingerprint, digest,
        run if content_run is None else content_run, dict(snapshot.metadata),
    )  # fmt: skip


def test_the_first_run_is_the_baseline_and_stores_its_content() -> None:
    reading = read_run(page(0), snap("a\n"), None, now=NOW, change_id=uuid.uuid4())
    assert reading.change is None
    assert reading.blob is not None and RunContent.decode(reading.blob).markdown == "a\n"
    assert (reading.record.content_run, reading.baseline_run) == (0, 0)


def test_a_changed_text_is_a_change_with_its_diff_and_metadata() -> None:
    before = snap("a\nb\n", title="Old")
    change_id = uuid.uuid4()
    reading = read_run(
        page(1), snap("a\nc\n", title="New"), (stored(0, before), before), now=NOW,
        change_id=change_id,
    )  # fmt: skip
    change = reading.change
    assert change is not None and change.id == change_id and change.kind is ChangeKind.CHANGED
    assert (change.run, change.previous_run) == (1, 0)
    assert change.diff is not None
    assert change.diff.markdown.text == "--- run 0\n+++ run 1\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n"
    assert change.diff.metadata == {"title": {"old": "Old", "new": "New"}}


def test_whitespace_alone_is_no_change_but_its_content_is_kept() -> None:
    before = snap("a b\n")
    reading = read_run(page(1), snap("a   b \n"), (stored(0, before), before), now=NOW,
                       change_id=uuid.uuid4())  # fmt: skip
    assert reading.change is None
    assert reading.blob is not None  # not byte-identical: its own content
    assert reading.baseline_run == 1


def test_identical_content_stores_no_blob_and_reads_the_earlier_one() -> None:
    before = snap("a\n")
    reading = read_run(page(2), snap("a\n"), (stored(1, before, content_run=0), before),
                       now=NOW, change_id=uuid.uuid4())  # fmt: skip
    assert reading.blob is None and reading.change is None
    assert reading.record.content_run == 0


def test_a_304_reads_the_baseline_and_a_failure_keeps_it() -> None:
    before = snap("a\n")
    baseline = (stored(3, before, content_run=2), before)
    unchanged = read_run(page(4, unchanged=True), None, baseline, now=NOW, change_id=uuid.uuid4())
    assert unchanged.change is None and unchanged.blob is None
    assert (unchanged.record.content_run, unchanged.baseline_run) == (2, 4)
    failed = read_run(page(4, status="FAILED"), None, baseline, now=NOW, change_id=uuid.uuid4())
    assert failed.change is None and failed.record.content_run is None
    assert failed.baseline_run == 3  # the next run is compared with the last good one


# --- a page of a crawl monitor's round, against the last round's job for it --------------------

LAST_ROUND_JOB = uuid.uuid4()


def last_round(snapshot: Snapshot) -> tuple[StoredRun, Snapshot]:
    digest = RunContent(snapshot.markdown, snapshot.text).digest
    record = StoredRun(
        LAST_ROUND_JOB, 0, NOW, "COMPLETED", 200, snapshot.fingerprint, digest, 0,
        dict(snapshot.metadata),
    )  # fmt: skip
    return record, snapshot


def test_a_crawl_page_changed_since_the_last_round_names_that_rounds_job() -> None:
    reading = read_crawl_page(
        page(0), snap("a\nc\n"), last_round(snap("a\nb\n")), now=NOW, change_id=uuid.uuid4()
    )
    change = reading.change
    assert change is not None and change.kind is ChangeKind.CHANGED
    assert (change.job_id, change.run) == (JOB, 0)
    assert (change.previous_job_id, change.previous_run) == (LAST_ROUND_JOB, 0)
    assert change.diff is not None and "-b\n+c" in change.diff.markdown.text
    # Its content is stored whole: the next round reads it from this job.
    assert reading.blob is not None and RunContent.decode(reading.blob).markdown == "a\nc\n"
    assert reading.record.content_run == 0


def test_a_crawl_page_differing_only_in_spacing_is_no_change() -> None:
    reading = read_crawl_page(
        page(0), snap("a  \u200bb\n"), last_round(snap("a b\n")), now=NOW, change_id=uuid.uuid4()
    )
    assert reading.change is None and reading.blob is not None


def test_a_crawl_page_new_or_unreadable_reports_nothing() -> None:
    new = read_crawl_page(page(0), snap("a\n"), None, now=NOW, change_id=uuid.uuid4())
    assert new.change is None and new.blob is not None
    unreadable = read_crawl_page(
        page(0), None, last_round(snap("a\n")), now=NOW, change_id=uuid.uuid4()
    )
    assert unreadable.change is None and unreadable.blob is None
    assert unreadable.record.fingerprint is None
