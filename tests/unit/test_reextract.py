"""``taskcrawler reextract`` parses each archived page where a worker would, under the parse
deadline (taskcrawler/worker/parsing.py): a page that hangs the new extractor, or kills its
process, keeps its stored result, and the others are extracted again."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from uuid import UUID

from taskcrawler.domain.chunks import Chunk
from taskcrawler.domain.pages import Archived, FetchedPage, Reextracted
from taskcrawler.extract.chunking import ChunkingConfig
from taskcrawler.service.reextract import Rechunking, reextract_all
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


class Chunks:
    """A ChunkRepository whose every job has chunks, those remade recorded."""

    def __init__(self) -> None:
        self.made: dict[UUID, list[Chunk]] = {}

    async def remake(self, job_id: UUID, made: Sequence[Chunk], *, counted: bool = False) -> bool:
        self.made[job_id] = list(made)
        return True


async def test_a_rechunked_page_s_result_counts_its_new_chunks() -> None:
    """``result.chunks.count`` is how many chunks the page has (docs/how-to/rag.md): made again
    from the new Markdown, the count is theirs, not the old extraction's."""
    sections = "".join(f"<h2>Part {n}</h2><p>{'word ' * 60}</p>" for n in range(3))
    page = FetchedPage(
        "http://x.test/", "http://x.test/", 200, {}, "text/html", None,
        f"<title>t</title><main>{sections}</main>".encode(),
    )  # fmt: skip
    old = {"chunks": {"count": 40, "model": "m"}, "metadata": {}}
    item = Archived(uuid.uuid4(), "o", ("markdown", "chunks"), page, result=old)
    store, chunks = Archive([item]), Chunks()
    parser = PageParser(processes=1)
    try:
        done = await reextract_all(
            store,  # type: ignore[arg-type]
            parser,
            rechunking=Rechunking(chunks, ChunkingConfig(target_tokens=40, overlap_tokens=0)),  # type: ignore[arg-type]
        )
    finally:
        await parser.aclose()
    assert done.rechunked == 1
    made = chunks.made[item.job_id]
    [rewritten] = store.rewritten
    assert len(made) > 1
    assert rewritten.result["chunks"] == {"count": len(made), "model": "m"}
