"""From an extraction to what is stored beside the job (shared by the worker and reextract)."""

from __future__ import annotations

from collections.abc import Collection

from taskcrawler.domain.pages import OutLink, PageContent, RawPage
from taskcrawler.extract import Extraction

TEXT_FORMATS = ("markdown", "text", "html")


def page_content(
    extraction: Extraction, formats: Collection[str], archive: RawPage | None
) -> PageContent:
    texts = {
        fmt: body
        for fmt in TEXT_FORMATS
        if fmt in formats and (body := getattr(extraction, fmt)) is not None
    }
    links = (
        tuple(OutLink(a.url, a.text, a.rel, a.internal, a.nofollow) for a in extraction.links)
        if "links" in formats
        else None
    )
    return PageContent(texts=texts, links=links, archive=archive)
