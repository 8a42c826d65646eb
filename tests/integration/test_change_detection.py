"""Change detection end to end, without the scheduler: rounds of the real fetcher and the real
extraction against a local site whose pages change on command (tests/support/changing_site.py).

Each round fetches every page (conditionally when the last answer had validators), reads it
through the ignore selectors, fingerprints it, compares it with the last run and diffs it. Every
real change must be reported once, in its round, with a diff that turns the old Markdown into the
new exactly; no noise may be reported; an unchanged page with validators costs a 304 and no
body. Precision and recall over all pages and rounds are computed from the site's own record of
its edits, and printed (``pytest -s``).
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field

import pytest

from taskcrawler.domain.monitors import (
    Comparison,
    Snapshot,
    page_set_changes,
)
from taskcrawler.domain.runs import RunContent
from taskcrawler.domain.selectors import IgnoreSelector, parse_ignore_selectors
from taskcrawler.extract import extract
from taskcrawler.fetch import FetchedPage, Fetcher
from tests.support.changing_site import (
    NOISE_SELECTORS,
    ChangingSiteServer,
    Edit,
    PageKind,
    start_changing_site,
)
from tests.support.hostile import fetch_settings
from tests.support.patch import apply_patch

ROUNDS = 8
SEED = 25


@pytest.fixture
def site() -> Iterator[ChangingSiteServer]:
    server = start_changing_site(seed=SEED)
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
async def fetcher() -> AsyncIterator[Fetcher]:
    instance = Fetcher(fetch_settings(allow_private_networks=True))
    yield instance
    await instance.close()


@dataclass
class Watched:
    """What a monitor keeps of one page between runs."""

    snapshot: Snapshot | None = None
    etag: str | None = None
    last_modified: str | None = None
    runs: list[bytes] = field(default_factory=list)  # stored content blobs

    def conditional_headers(self) -> dict[str, str]:
        headers = {}
        if self.etag:
            headers["If-None-Match"] = self.etag
        if self.last_modified:
            headers["If-Modified-Since"] = self.last_modified
        return headers


@dataclass
class Report:
    """What the rounds found, against what the site did."""

    reported: set[tuple[int, str]] = field(default_factory=set)
    edits: dict[tuple[int, str], Edit] = field(default_factory=dict)
    diffs: dict[tuple[int, str], str] = field(default_factory=dict)

    @property
    def precision(self) -> float:
        true = len(self.reported & self.edits.keys())
        return true / len(self.reported) if self.reported else 1.0

    @property
    def recall(self) -> float:
        true = len(self.reported & self.edits.keys())
        return true / len(self.edits) if self.edits else 1.0


def _snapshot(page: FetchedPage, ignore: tuple[IgnoreSelector, ...]) -> Snapshot:
    extraction = extract(
        page.body,
        url=page.final_url,
        charset=page.charset,
        formats=("markdown", "text"),
        ignore=ignore,
    )
    assert extraction.markdown is not None and extraction.text is not None
    return Snapshot.of(
        markdown=extraction.markdown, text=extraction.text, metadata=extraction.metadata
    )


async def _run_rounds(
    site: ChangingSiteServer, fetcher: Fetcher, ignore: tuple[IgnoreSelector, ...]
) -> Report:
    rng = random.Random(SEED)
    watched = {path: Watched() for path in site.site.pages}
    report = Report()
    for round_number in range(ROUNDS):
        if round_number:
            for path in rng.sample(site.site.changing_paths, 4):
                report.edits[round_number, path] = site.site.change(path)
        for path, state in watched.items():
            page = await fetcher.fetch(site.url(path), headers=state.conditional_headers())
            if page.status == 304:
                assert state.snapshot is not None  # only ever after a first full answer
                continue
            snapshot = _snapshot(page, ignore)
            comparison = snapshot.compare(state.snapshot)
            if comparison is Comparison.CHANGED:
                assert state.snapshot is not None
                diff = snapshot.diff(state.snapshot, from_label="before", to_label="after")
                assert apply_patch(state.snapshot.markdown, diff.markdown.text) == snapshot.markdown
                report.reported.add((round_number, path))
                report.diffs[round_number, path] = diff.markdown.text
            else:
                assert comparison is (
                    Comparison.FIRST if round_number == 0 else Comparison.UNCHANGED
                )
            content = RunContent(snapshot.markdown, snapshot.text)
            if not state.runs or RunContent.decode(state.runs[-1]).digest != content.digest:
                state.runs.append(content.encode())
            state.snapshot = snapshot
            state.etag = page.headers.get("etag")
            state.last_modified = page.headers.get("last-modified")
    return report


async def test_every_real_change_is_reported_once_with_an_exact_diff(
    site: ChangingSiteServer, fetcher: Fetcher
) -> None:
    report = await _run_rounds(site, fetcher, parse_ignore_selectors(list(NOISE_SELECTORS)))
    print(
        f"\nchange detection on the changing site: {len(report.edits)} real changes, "
        f"{len(report.reported)} reported, precision {report.precision:.3f}, "
        f"recall {report.recall:.3f}"
    )
    assert len(report.edits) == 4 * (ROUNDS - 1)
    assert report.reported == set(report.edits)  # each in its round, once; nothing else
    assert (report.precision, report.recall) == (1.0, 1.0)
    for key, edit in report.edits.items():
        changed = [row for row in report.diffs[key].splitlines() if row[:1] in "+-"][2:]
        assert changed == [f"-{edit.old}", f"+{edit.new}"], key


async def test_without_ignore_selectors_the_noise_is_reported(
    site: ChangingSiteServer, fetcher: Fetcher
) -> None:
    """The control: the same rounds without the selectors. Normalization alone still hides
    the respelled text, but the timestamps, counters and ads are reported as changes."""
    report = await _run_rounds(site, fetcher, ())
    noisy = {path for path, page in site.site.pages.items() if page.kind.noisy}
    false = report.reported - report.edits.keys()
    print(
        f"\nwithout ignore selectors: precision {report.precision:.3f}, recall {report.recall:.3f}"
    )
    assert report.recall == 1.0
    assert {path for _, path in false} == noisy
    assert report.precision < 1.0


async def test_pages_with_validators_are_not_downloaded_again_until_they_change(
    site: ChangingSiteServer, fetcher: Fetcher
) -> None:
    report = await _run_rounds(site, fetcher, parse_ignore_selectors(list(NOISE_SELECTORS)))
    for path, page in site.site.pages.items():
        served = site.served_for(path)
        assert len(served) == ROUNDS
        changes = sum(1 for _, edited in report.edits if edited == path)
        full = [s for s in served if s.status == 200]
        if page.kind in (PageKind.ETAG, PageKind.DATED):
            # the first answer, then one per change; every other round a bodiless 304
            assert len(full) == 1 + changes, path
            assert all(s.conditional for s in served[1:])
            assert sum(s.body_bytes for s in served if s.status == 304) == 0
            assert sum(s.status == 304 for s in served) == ROUNDS - 1 - changes
        else:
            assert len(full) == ROUNDS and all(s.body_bytes > 0 for s in full)
    validated = [s for s in site.served if s.status == 304]
    print(
        f"\n{len(validated)} of {len(site.served)} fetches answered 304 with 0 body bytes; "
        f"bytes sent: {sum(s.body_bytes for s in site.served)}"
    )
    assert validated and site.not_modified == len(validated)


async def test_crawl_rounds_report_pages_added_and_removed(
    site: ChangingSiteServer, fetcher: Fetcher
) -> None:
    """A crawl monitor's page set: the links of the site's index, round after round."""

    async def page_set() -> list[str]:
        index = await fetcher.fetch(site.url("/"))
        extraction = extract(index.body, url=index.final_url, formats=("links",))
        return [link.url for link in extraction.links]

    previous = await page_set()
    site.site.add_page("/etag/new")
    site.site.remove_page("/noisy/0")
    site.site.remove_page("/mixed/2")
    current = await page_set()
    changes = page_set_changes(previous, current, complete=True)
    assert changes.added == (site.url("/etag/new"),)
    assert changes.removed == (site.url("/mixed/2"), site.url("/noisy/0"))
    assert page_set_changes(current, current, complete=True).added == ()
    assert page_set_changes(current, current, complete=True).removed == ()
    # A round that did not see the whole site (its limit, a failure) reports no removals.
    assert page_set_changes(previous, current[:3], complete=False).removed == ()
