"""Rebuild every result from the raw archive after the extractor improved: no fetching.

Each page is extracted as the worker extracts it: with its job's options (main content or the
whole page, include and exclude tags, a PDF's pages) and through the worker's parser, so that a
page that once needed a parser process gets one again, under the same deadline and memory
limit. A page that cannot be extracted again keeps the result it has.

A page that has chunks gets them made again from its new Markdown (their offsets, text and
headings are of the Markdown), in a thread, but not embedded: a slow embedder must not hold the
re-extraction up. They are found by keyword at once and by meaning after `taskcrawler reindex`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Protocol

from taskcrawler.domain.chunks import CHUNKS_FORMAT
from taskcrawler.domain.pages import Archived, ContentRecord, Reextracted
from taskcrawler.domain.storable import storable_content, storable_json, storable_text
from taskcrawler.extract.chunking import ChunkingConfig, chunk_page
from taskcrawler.extract.page import ContentChoice, Extraction
from taskcrawler.extract.stored import (
    content_choice,
    extracted_formats,
    page_content,
    rederived_result,
)
from taskcrawler.storage.ports import ChunkRepository, ContentRepository

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
    chunked = CHUNKS_FORMAT in item.formats
    # Made storable as the worker's outcomes are (taskcrawler.domain.storable).
    return Reextracted(
        ContentRecord(item.job_id, item.owner, storable_content(content)),
        None if extraction.title is None else storable_text(extraction.title),
        storable_json(rederived_result(item.result, {"metadata": extraction.metadata})),
        markdown=storable_text(extraction.markdown or "") if chunked else None,
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


@dataclass(frozen=True, slots=True)
class Rechunking:
    """Where a re-extraction makes its pages' chunks again, and how they are cut."""

    store: ChunkRepository
    config: ChunkingConfig


@dataclass(slots=True)
class ReextractCounts:
    pages: int = 0
    #: Pages whose chunks were made again (unembedded until `taskcrawler reindex`).
    rechunked: int = 0


async def _rechunk(
    results: Sequence[Reextracted], rechunking: Rechunking
) -> tuple[list[Reextracted], int]:
    """The chunks of the pages of ``results`` that have some made again: ``results`` with
    those pages' ``result.chunks.count`` theirs (it says how many chunks a page has), and
    how many pages."""
    done: list[Reextracted] = []
    remade = 0
    for result in results:
        if result.markdown is not None:
            made = await asyncio.to_thread(
                chunk_page, result.markdown, result.title, rechunking.config
            )
            # A page whose result counts its chunks has them made even if it had none: its
            # old Markdown may have been empty, its new one not.
            counted = isinstance(result.result.get("chunks"), dict)
            if await rechunking.store.remake(result.record.job_id, made, counted=counted):
                remade += 1
                result = _counted(result, len(made))
        done.append(result)
    return done, remade


def _counted(result: Reextracted, count: int) -> Reextracted:
    chunks = result.result.get("chunks")
    counted = {**(chunks if isinstance(chunks, dict) else {}), "count": count}
    return dataclasses.replace(result, result={**result.result, "chunks": counted})


async def reextract_all(
    store: ContentRepository,
    parser: PageExtractor,
    *,
    rechunking: Rechunking | None = None,
    batch: int = 200,
) -> ReextractCounts:
    """Re-run extraction on every archived page; how many results were rewritten (and, with
    ``rechunking``, how many pages' chunks were made again)."""
    counts = ReextractCounts()
    async for items in store.archived(batch=batch):
        results = await _reextract_batch(items, parser)
        if rechunking is not None:
            # Before the results are written: they count the chunks made here.
            results, remade = await _rechunk(results, rechunking)
            counts.rechunked += remade
        await store.rewrite_results(results)
        counts.pages += len(results)
        log.info("re-extracted %d pages", counts.pages)
    return counts
