"""PDFs to Markdown and text, with PDFium (pypdfium2). Pure: bytes in, an Extraction out.

PDFium was chosen by measure (``python -m bench.pdf_extractors``: six PDFs printed by Chromium
from known text, English, a table, two columns, Japanese, Arabic): it read them as well as or
better than pypdf and pdfminer.six (token F1 0.99-1.00 on the English ones, 0.78 Japanese, 0.29
Arabic, where the others read 0.00-0.03 of the last two), at 150 pages/s through this module
against 13 and 5. It is BSD-licensed, as are its bindings (Apache-2.0 or BSD-3); PyMuPDF, the
usual other choice, is AGPL. It reads no DOCX: those stay an unsupported content type.

A PDF is hostile input like any page: it is read in a process of the parse pool, under the
parse deadline (a PDF that loops or crashes PDFium costs its own job only), its first
``max_pages`` pages and :data:`MAX_TEXT_CHARS` characters at most. The text is PDFium's, line
by line; the Markdown groups the lines into paragraphs by the gaps between them and makes
headings of the lines set larger than the body text.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from taskcrawler.extract.metadata import MAX_FIELD_CHARS
from taskcrawler.extract.page import Extraction

#: Pages read at most, whatever a request asks.
MAX_PAGES = 1000
#: Characters of text read at most, whatever the pages hold: every page may draw the same
#: compressed content stream, so a PDF of a few kilobytes can spell gigabytes of text. As much
#: as the largest HTML page the default body limit lets through.
MAX_TEXT_CHARS = 10 * 1024 * 1024
#: A line set this much larger than the body text is a heading.
_HEADING_RATIO = 1.15
#: A heading is a short line.
_MAX_HEADING_CHARS = 200
#: A gap between two lines larger than this many times the font size starts a paragraph.
_PARAGRAPH_GAP = 1.6
_LINE_BREAK = "\r\n"
_ESCAPED = re.compile(r"([\\`*_\[\]<])")
_BLOCK_START = re.compile(r"^(#{1,6}\s|>|[+-]\s|\d{1,9}[.)]\s)")
_WORDS = re.compile(r"\w+")


class UnreadablePdf(ValueError):
    """A PDF PDFium cannot open (damaged, encrypted, not a PDF)."""


@dataclass(frozen=True, slots=True)
class _Line:
    text: str
    size: float
    bottom: float
    page: int


def extract_pdf(
    body: bytes,
    *,
    url: str,
    formats: Collection[str] = ("metadata",),
    max_pages: int | None = None,
) -> Extraction:
    """What the PDF ``body`` says: Markdown and text of its first ``max_pages`` pages (at
    most :data:`MAX_PAGES`), its title and page counts. :class:`UnreadablePdf` when PDFium
    cannot open it."""
    import pypdfium2 as pdfium  # the parse pool's children import it; the API never does

    try:
        document = pdfium.PdfDocument(body)
    except pdfium.PdfiumError as exc:
        raise UnreadablePdf(f"the PDF cannot be read: {exc}") from None
    try:
        total = len(document)
        lines, limit = _document_lines(document, min(total, max_pages or MAX_PAGES, MAX_PAGES))
        info = _document_info(document)
    finally:
        document.close()
    text = _text_of(lines)
    markdown = _markdown_of(lines)
    words = _WORDS.findall(text)
    title = _title(info, lines)
    metadata: dict[str, Any] = {
        "title": title,
        "description": info.get("Subject") or None,
        "author": info.get("Author") or None,
        "pages": total,
        "pages_read": limit,
        "word_count": len(words),
        "content_hash": "sha256:" + hashlib.sha256(" ".join(words).encode()).hexdigest(),
        "links": {"total": 0, "kept": 0, "cut": False},
    }
    return Extraction(
        title=title,
        metadata=metadata,
        markdown=markdown if "markdown" in formats else None,
        text=text if "text" in formats else None,
        encoding="pdf",
    )


def _document_info(document: Any) -> dict[str, str]:
    """The document information (Title, Subject, Author…), each cut as an HTML page's fields
    are: a compressed object stream can hold megabytes of it in a few kilobytes."""
    info: dict[str, str] = document.get_metadata_dict(skip_empty=True)
    return {name: value[:MAX_FIELD_CHARS] for name, value in info.items()}


def _document_lines(document: Any, max_pages: int) -> tuple[list[_Line], int]:
    """The lines of the first ``max_pages`` pages, within :data:`MAX_TEXT_CHARS`, and how many
    pages they come from."""
    import pypdfium2 as pdfium

    lines: list[_Line] = []
    budget = MAX_TEXT_CHARS
    pages_read = 0
    while pages_read < max_pages and budget > 0:
        try:
            page_lines, chars = _page_lines(document, pages_read, budget)
        except pdfium.PdfiumError:
            # A page PDFium cannot load (a page tree counting more pages than it holds, a
            # damaged page object): the others are still read, as a PDF viewer shows them.
            page_lines, chars = [], 0
        lines += page_lines
        budget -= chars
        pages_read += 1
    return lines, pages_read


def _page_lines(document: Any, index: int, max_chars: int) -> tuple[list[_Line], int]:
    """The lines of page ``index`` within its first ``max_chars`` characters, and how many
    characters it has (at most ``max_chars``)."""
    import pypdfium2.raw as raw

    page = document[index]
    textpage = page.get_textpage()
    try:
        chars = min(textpage.count_chars(), max_chars)
        content = textpage.get_text_range(count=chars) if chars else ""
        lines = []
        position = 0  # PDFium counts characters in UTF-16 units
        for line in content.split(_LINE_BREAK):
            if line.strip():
                size = float(raw.FPDFText_GetFontSize(textpage.raw, position))
                bottom = float(textpage.get_charbox(position)[1])
                lines.append(_Line(" ".join(line.split()), size, bottom, index))
            position += len(line.encode("utf-16-le")) // 2 + len(_LINE_BREAK)
        return lines, chars
    finally:
        textpage.close()
        page.close()


def _text_of(lines: list[_Line]) -> str:
    pages: dict[int, list[str]] = {}
    for line in lines:
        pages.setdefault(line.page, []).append(line.text)
    return "\n\n".join("\n".join(page) for page in pages.values())


def _body_size(lines: list[_Line]) -> float:
    sizes: Counter[float] = Counter()
    for line in lines:
        sizes[round(line.size, 1)] += len(line.text)
    return sizes.most_common(1)[0][0] if sizes else 0.0


def _heading_levels(lines: list[_Line], body: float) -> dict[float, int]:
    """Each size larger than the body's, largest first: level 1, 2, … (at most 6)."""
    larger = sorted(
        {
            round(line.size, 1)
            for line in lines
            if line.size > body * _HEADING_RATIO and len(line.text) <= _MAX_HEADING_CHARS
        },
        reverse=True,
    )
    return {size: min(level, 6) for level, size in enumerate(larger, start=1)}


def _markdown_of(lines: list[_Line]) -> str:
    body = _body_size(lines)
    levels = _heading_levels(lines, body)
    blocks: list[str] = []
    paragraph: list[str] = []
    previous: _Line | None = None

    def close() -> None:
        if paragraph:
            blocks.append(_escape(" ".join(paragraph)))
            paragraph.clear()

    for line in lines:
        level = levels.get(round(line.size, 1)) if len(line.text) <= _MAX_HEADING_CHARS else None
        if level is not None:
            close()
            blocks.append(f"{'#' * level} {_escape(line.text, heading=True)}")
        else:
            if previous is not None and _starts_paragraph(previous, line):
                close()
            paragraph.append(line.text)
        previous = line
    close()
    return "\n\n".join(blocks)


def _starts_paragraph(previous: _Line, line: _Line) -> bool:
    if previous.page != line.page or round(previous.size, 1) != round(line.size, 1):
        return True
    gap = previous.bottom - line.bottom
    return gap <= 0 or gap > line.size * _PARAGRAPH_GAP


def _escape(text: str, *, heading: bool = False) -> str:
    escaped = _ESCAPED.sub(r"\\\1", text)
    if not heading and _BLOCK_START.match(escaped):
        escaped = "\\" + escaped
    return escaped


def _title(info: dict[str, str], lines: list[_Line]) -> str | None:
    """The document's own title, unless it is a file name; else its largest first line."""
    declared = (info.get("Title") or "").strip()
    if declared and not re.search(r"\.(html?|docx?|pdf|txt)$", declared, re.IGNORECASE):
        return declared[:1000]
    first_page = [line for line in lines if line.page == lines[0].page] if lines else []
    if not first_page:
        return declared or None
    largest = max(first_page, key=lambda line: line.size)
    return largest.text[:1000]


__all__ = ["MAX_PAGES", "MAX_TEXT_CHARS", "UnreadablePdf", "extract_pdf"]
