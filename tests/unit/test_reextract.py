"""``taskcrawler reextract`` parses each archived page where a worker would, under the parse
deadline (taskcrawler/worker/parsing.py): a page that hangs the new extractor, or kills its
process, keeps its stored result, and the others are extracted again."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence

from taskcrawler.domain.pages import Archived, FetchedPage, Reextracted
from taskcrawler.service.reextract import reextract_all
from taskcrawler.worker.parsing import PageParser
from tests.support.extractors import hostile


def archived(body: bytes) -> Archived:
    page = FetchedPage("http://x.test/", "http://x.test/", 200, {}, "text/html", None, body)
    return Archived(uuid.uuid4(), "o", ("markdown",), page)


class Archive:
    """A ContentRepository holding archived pages, the rewritten results recorded."""

    def __init__(self, items: list[Archived]) -> None:
        self.items = items
        self.rewritten: list[Reextracted] = []

    async def archived(self, *, batch: int = 200) -> AsyncIterator[list[Archived]]:
        for start in range(0, len(self.items), batch):
            yield self.items[start : start + batch]

    async def rewrite_results(self, results: Sequence[Reextracted]) -> None:
        self.rewritten += results


async def test_a_page_that_hangs_or_kills_its_parse_keeps_its_result() -> None:
    good = archived(b"<title>good</title><p>words</p>")
    store = Archive([archived(b"hang"), good, archived(b"crash"), archived(b"fail")])
    # Every page goes to the processes, as a big or many-tagged one does.
    parser = PageParser(hostile, timeout=1.0, processes=1, inline_limit=0, thread_limit=0)
    try:
        done = await reextract_all(store, parser, batch=2)  # type: ignore[arg-type]
    finally:
        await parser.aclose()
    assert done.pages == 1
    [rewritten] = store.rewritten
    assert rewritten.record.job_id == good.job_id
    assert rewritten.title is not None and rewritten.title.startswith("good|")
