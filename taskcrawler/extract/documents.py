"""One entry point for every kind of page a job reads: HTML (and text, XML) or a PDF, by the
content type it was served with. Pure, as the extractors it picks."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from taskcrawler.domain.selectors import IgnoreSelector
from taskcrawler.extract.links import MAX_LINKS_PER_PAGE
from taskcrawler.extract.page import WHOLE_CONTENT, ContentChoice, Extraction, extract
from taskcrawler.extract.pdf import extract_pdf

#: Content types read as PDFs.
PDF_TYPES = frozenset({"application/pdf"})


def is_document(content_type: str | None) -> bool:
    """Whether a page of this content type is a document (read in the parse processes
    whatever its size: PDFium is C code reading hostile bytes)."""
    return content_type in PDF_TYPES


def extract_page(
    body: bytes,
    *,
    url: str,
    charset: str | None = None,
    content_type: str | None = None,
    formats: Collection[str] = ("metadata",),
    max_links: int = MAX_LINKS_PER_PAGE,
    ignore: Sequence[IgnoreSelector] = (),
    choice: ContentChoice = WHOLE_CONTENT,
    max_pages: int | None = None,
) -> Extraction:
    """What the page says: a PDF read by :func:`extract_pdf`, anything else by
    :func:`extract`."""
    if content_type in PDF_TYPES:
        return extract_pdf(body, url=url, formats=formats, max_pages=max_pages)
    return extract(
        body,
        url=url,
        charset=charset,
        formats=formats,
        max_links=max_links,
        ignore=ignore,
        choice=choice,
    )


__all__ = ["PDF_TYPES", "extract_page", "is_document"]
