"""One page in the foreground: fetch and extract without a database or a queue."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from taskcrawler.domain import FetchError, validate_url
from taskcrawler.domain.jobs import DEFAULT_FORMATS
from taskcrawler.extract import extract
from taskcrawler.extract.stored import TEXT_FORMATS
from taskcrawler.fetch import Fetcher

#: What ``scrape_once`` can make (chunks and screenshots need the service).
SCRAPE_FORMATS = ("metadata", *TEXT_FORMATS, "links")


async def scrape_once(
    fetcher: Fetcher, url: str, formats: Sequence[str] = DEFAULT_FORMATS
) -> dict[str, Any]:
    """Fetch and extract ``url`` with ``fetcher``, which is closed afterwards: the page's
    metadata, and its ``formats`` (Markdown, text, HTML, links) as a job would keep them."""
    validate_url(url)
    unknown = sorted(set(formats) - set(SCRAPE_FORMATS))
    if unknown:
        raise ValueError(f"formats {unknown} need the service; scrape makes {SCRAPE_FORMATS}")
    try:
        page = await fetcher.fetch(url)
    except FetchError as exc:
        return {"url": url, "error_code": exc.code, "error_log": exc.log_line}
    finally:
        await fetcher.close()
    extraction = extract(page.body, url=page.final_url, charset=page.charset, formats=formats)
    found: dict[str, Any] = {
        "url": url,
        "final_url": page.final_url,
        "http_status": page.status,
        "content_type": page.content_type,
        "scraped_title": extraction.title,
        "error_code": None,
        "result": {"metadata": extraction.metadata},
    }
    for fmt in TEXT_FORMATS:
        if fmt in formats:
            found[fmt] = getattr(extraction, fmt)
    if "links" in formats:
        found["links"] = [{"url": link.url, "text": link.text} for link in extraction.links]
    return found
