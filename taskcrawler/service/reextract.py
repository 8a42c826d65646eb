"""Rebuild every result from the raw archive after the extractor improved: no fetching.

Each page is extracted as the worker extracts it: with its job's options (main content or the
whole page, include and exclude tags, a PDF's pages) and through the worker's parser, so that a
page that once needed a parser process gets one again, under the same deadline and memory
limit. A page that cannot be extracted again keeps the result it has.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection, Sequence
from typing import Protocol

from taskcrawler.domain.pages import Archived, ContentRecord, Reextracted
from taskcrawler.domain.storable import storable_content, storable_json, storable_text
from taskcrawler.extract.page import ContentChoice, Extraction
from taskcrawler.extract.stored import (
    content_choice,
    extracted_formats,
    page_content,
    rederived_result,
)
from taskcrawler.storage.ports import ContentRepository

log = logging.getLogger(__name__)

#: Pages of a batch extracted at once: enough to keep a few parser processes busy.
CONCURRENT_PAGES = 4


class PageExtractor(Protocol):
    """What extracts a page: the worker's parser (``taskcrawler.worker.parsing.PageParser``)."""

    async def extract(
        self,
        body: bytes,
        *,
        url: str,
        charset: str | None,
        formats: Collection[str],
        content_type: str | None = None,
        choice: ContentChoice = ...,
        max_pages: int | None = None,
    ) -> Extraction: ...


async def _reextract(item: Archived, parser: PageExtractor) -> Reextracted:
    page = item.page
    extraction = await parser.extract(
        page.body,
        url=page.final_url,
        charset=page.charset,
        formats=extracted_formats(item.formats),
        content_type=page.content_type,
        choice=content_choice(item.options),
        max_pages=item.options.max_pages,
    )
    content = page_content(extraction, item.formats, archive=None)
    # Made storable as the worker's outcomes are (taskcrawler.domain.storable).
    return Reextracted(
        ContentRecord(item.job_id, item.owner, storable_content(content)),
        None if extraction.title is None else storable_text(extraction.title),
        storable_json(rederived_result(item.result, {"metadata": extraction.metadata})),
    )


async def _reextract_batch(items: Sequence[Archived], parser: PageExtractor) -> list[Reextracted]:
    """The batch's pages extracted again, but for those that fail (logged, their results
    kept): a parse that overruns or crashes its process, a document that no longer reads."""
    gate = asyncio.Semaphore(CONCURRENT_PAGES)

    async def one(item: Archived) -> Reextracted | None:
        async with gate:
            try:
                return await _reextract(item, parser)
            except Exception as exc:
                log.warning("job %s not re-extracted: %s", item.job_id, type(exc).__name__)
                return None

    done = await asyncio.gather(*(one(item) for item in items))
    return [result for result in done if result is not None]


async def reextract_all(
    store: ContentRepository, parser: PageExtractor, *, batch: int = 200
) -> int:
    """Re-run extraction on every archived page; returns how many results were rewritten."""
    done = 0
    async for items in store.archived(batch=batch):
        results = await _reextract_batch(items, parser)
        await store.rewrite_results(results)
        done += len(results)
        log.info("re-extracted %d pages", done)
    return done
