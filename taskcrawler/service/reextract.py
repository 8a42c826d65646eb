"""Rebuild every result from the raw archive after the extractor improved: no fetching."""

from __future__ import annotations

import asyncio
import logging

from taskcrawler.domain.pages import Archived, ContentRecord, Reextracted
from taskcrawler.domain.storable import storable_content, storable_json, storable_text
from taskcrawler.extract.documents import extract_page
from taskcrawler.extract.stored import extracted_formats, page_content, rederived_result
from taskcrawler.storage.ports import ContentRepository

log = logging.getLogger(__name__)


def _reextract(item: Archived) -> Reextracted:
    page = item.page
    formats = extracted_formats(item.formats)
    extraction = extract_page(
        page.body,
        url=page.final_url,
        charset=page.charset,
        content_type=page.content_type,
        formats=formats,
    )
    content = page_content(extraction, item.formats, archive=None)
    # Made storable as the worker's outcomes are (taskcrawler.domain.storable).
    return Reextracted(
        ContentRecord(item.job_id, item.owner, storable_content(content)),
        None if extraction.title is None else storable_text(extraction.title),
        storable_json(rederived_result(item.result, {"metadata": extraction.metadata})),
    )


def _reextract_batch(items: list[Archived]) -> list[Reextracted]:
    return [_reextract(item) for item in items]


async def reextract_all(store: ContentRepository, *, batch: int = 200) -> int:
    """Re-run extraction on every archived page; returns how many results were rewritten."""
    done = 0
    async for items in store.archived(batch=batch):
        # Parsing is CPU work: a thread keeps the event loop (and its connections) responsive.
        results = await asyncio.to_thread(_reextract_batch, items)
        await store.rewrite_results(results)
        done += len(results)
        log.info("re-extracted %d pages", done)
    return done
