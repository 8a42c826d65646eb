"""From an extraction to what is stored beside the job: which formats the extractor is asked
for and what of the page a job's options choose, the content kept of what it made, and the
result of a page extracted again. Shared by the worker and ``taskcrawler reextract``."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from taskcrawler.domain.chunks import CHUNKS_FORMAT
from taskcrawler.domain.pages import FetchedPage, PageContent
from taskcrawler.domain.scrape_options import ScrapeOptions
from taskcrawler.domain.selectors import parse_ignore_selectors
from taskcrawler.domain.structured import STRUCTURED_FORMATS
from taskcrawler.extract.page import WHOLE_CONTENT, ContentChoice, Extraction

TEXT_FORMATS = ("markdown", "text", "html", "clean_html", "images")
#: Formats a job may ask for that the extractor does not make: the browser takes screenshots,
#: chunks are cut from the Markdown, a model (or selectors) make json and summary.
NOT_EXTRACTED = frozenset({"screenshot", CHUNKS_FORMAT}) | STRUCTURED_FORMATS
#: Formats made from the page's Markdown.
_FROM_MARKDOWN = frozenset({CHUNKS_FORMAT}) | STRUCTURED_FORMATS


def content_choice(options: ScrapeOptions) -> ContentChoice:
    """What of a page a job's options have its Markdown, text and cleaned HTML hold (the
    selectors were checked when the job was submitted)."""
    if (
        options.only_main_content
        and not options.include_tags
        and not options.exclude_tags
        and not options.keep_base64_images
    ):
        return WHOLE_CONTENT  # nearly every job: no selectors to parse, no choice to compare
    choice = ContentChoice(
        only_main_content=options.only_main_content,
        include=parse_ignore_selectors(options.include_tags, "include_tags"),
        exclude=parse_ignore_selectors(options.exclude_tags, "exclude_tags"),
        keep_data_images=options.keep_base64_images,
    )
    return WHOLE_CONTENT if choice == WHOLE_CONTENT else choice


def extracted_formats(formats: Collection[str]) -> tuple[str, ...]:
    """What the extractor is asked for, of a job's formats (chunks, json and summary need
    the Markdown)."""
    wanted = [fmt for fmt in formats if fmt not in NOT_EXTRACTED]
    if _FROM_MARKDOWN & set(formats) and "markdown" not in wanted:
        wanted.append("markdown")
    return tuple(wanted)


def page_content(
    extraction: Extraction, formats: Collection[str], archive: FetchedPage | None
) -> PageContent:
    texts = {
        fmt: "\n".join(body) if isinstance(body, list) else body
        for fmt in TEXT_FORMATS
        if fmt in formats and (body := getattr(extraction, fmt)) is not None
    }
    links = tuple(extraction.links) if "links" in formats else None
    return PageContent(texts=texts, links=links, archive=archive)


def rederived_result(
    stored: Mapping[str, Any] | None, extracted: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The result of a page extracted again from its stored copy: what the extraction made,
    over what it does not make (how the page was rendered) kept from the stored result."""
    return {**(stored or {}), **(extracted or {})}
