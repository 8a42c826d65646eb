"""Rebuild every result from the raw archive after the extractor improved: no fetching.

Each page is parsed where a worker would parse it (``taskcrawler.worker.parsing``, handed in
as ``parser``): small ones inline, bigger ones in a thread, the rest in parser processes under
the parse deadline. An archived page is a page of the web like any other, and the extractor
that reads it again is a new one: a page that overruns its deadline, kills its process or
fails the extractor keeps its stored result, and the others go on.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from typing import Protocol

from taskcrawler.domain.pages import Archived, ContentRecord, Reextracted
from taskcrawler.domain.storable import storable_content, storable_json, storable_text
from taskcrawler.extract import Extraction
from taskcrawler.extract.stored import extracted_formats, page_content, rederived_result
from taskcrawler.storage.ports import ContentRepository

log = logging.getLogger(__name__)


class Parser(Protocol):
    """Where pages are parsed (``taskcrawler.worker.parsing.PageParser``)."""

    async def extract(
        self,
        body: bytes,
        *,
        url: str,
        charset: str | None,
        formats: Collection[str],
        content_type: str | None = None,
    ) -> Extraction: ...


async def reextract_all(store: ContentRepository, parser: Parser, *, batch: int = 200) -> int:
    """Re-run extraction on every archived page; returns how many results were rewritten."""
    done = 0
    async for items in store.archived(batch=batch):
        results = [found for item in items if (found := await _reextract(parser, item))]
        if results:
            await store.rewrite_results(results)
        done += len(results)
        log.info("re-extracted %d pages", done)
    return done


async def _reextract(parser: Parser, item: Archived) -> Reextracted | None:
    """``item``'s page extracted again; None when that failed (it keeps its stored result)."""
    page = item.page
    try:
        extraction = await parser.extract(
            page.body,
            url=page.final_url,
            charset=page.charset,
            content_type=page.content_type,
            formats=extracted_formats(item.formats),
        )
    except Exception:
        log.exception(
            "job %s keeps its stored result: its page could not be extracted", item.job_id
        )
        return None
    content = page_content(extraction, item.formats, archive=None)
    # Made storable as the worker's outcomes are (taskcrawler.domain.storable).
    return Reextracted(
        ContentRecord(item.job_id, item.owner, storable_content(content)),
        None if extraction.title is None else storable_text(extraction.title),
        storable_json(rederived_result(item.result, {"metadata": extraction.metadata})),
    )
