"""One page in the foreground: fetch and extract without a database or a queue."""

from __future__ import annotations

from typing import Any

from taskcrawler.domain import FetchError, validate_url
from taskcrawler.extract import extract
from taskcrawler.fetch import Fetcher


async def scrape_once(fetcher: Fetcher, url: str) -> dict[str, Any]:
    """Fetch and extract ``url`` with ``fetcher``, which is closed afterwards."""
    validate_url(url)
    try:
        page = await fetcher.fetch(url)
    except FetchError as exc:
        return {"url": url, "error_code": exc.code, "error_log": exc.log_line}
    finally:
        await fetcher.close()
    extraction = extract(page.body, url=page.final_url, charset=page.charset)
    return {
        "url": url,
        "final_url": page.final_url,
        "http_status": page.status,
        "content_type": page.content_type,
        "scraped_title": extraction.title,
        "error_code": None,
        "result": {"metadata": extraction.metadata},
    }
