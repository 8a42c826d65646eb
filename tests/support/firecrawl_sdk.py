"""Firecrawl's Python SDK (``firecrawl-py``), imported when a test builds a client.

Every test process imports every test module to collect the suite (``make test`` runs six), and
the SDK (hundreds of pydantic models, ``requests``, ``websockets``) costs about 0.3 to 0.5 s of
CPU to import: here only a process that runs one of its tests pays it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from firecrawl import Firecrawl
    from firecrawl.v1 import V1FirecrawlApp


def v2_client(api_key: str, api_url: str) -> Firecrawl:
    """The SDK's current client (``Firecrawl``, the v2 API)."""
    from firecrawl import Firecrawl

    return Firecrawl(api_key=api_key, api_url=api_url)


def v1_client(api_key: str, api_url: str) -> V1FirecrawlApp:
    """The SDK's client of the v1 API."""
    from firecrawl.v1 import V1FirecrawlApp

    return V1FirecrawlApp(api_key=api_key, api_url=api_url)


def v2_scrape_options(**options: Any) -> Any:
    """The v2 SDK's ``ScrapeOptions`` (the options of a search's scrapes)."""
    from firecrawl.v2.types import ScrapeOptions

    return ScrapeOptions(**options)
